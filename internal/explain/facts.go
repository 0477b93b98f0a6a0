// Package explain answers "why is this group not running?" by walking the guide's
// debugging path in order: the objects exist; the API is served and muster owns the group;
// membership; admission and fit; what happened after placement; what the timeout will do.
// Each step is a line with ✓ or ✗ and the evidence found, and the report ends with one
// verdict naming the first failing step and the fix to try.
//
// The evidence text comes from muster's core: membership from package source, admission
// and fit from the scheduler's own typed reason and diagnosis (recorded on the group in
// the muster.dev/lifecycle annotation), and the timeout from the group's lifecycle
// record. explain chooses its fixes from the typed record and never parses a message.
// It re-runs placement (package placement on a live snapshot) only for a what-if it
// labels as such: would the queued group's unplaced members fit the cluster now? Building the report (Build) is pure;
// Gather collects the Facts from a cluster.
package explain

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/placement"
)

// Facts is everything explain looked up about one group.
type Facts struct {
	// Target is what the user asked about, e.g. pytorchjob/bert in namespace default.
	Kind, Name, Namespace string
	// SchedulerNames are the schedulerNames muster serves, its Configuration's
	// schedulerName first.
	SchedulerNames []string
	// Parent is the workload object (a PyTorchJob, Job, ...) when Kind names one.
	Parent *unstructured.Unstructured
	// ParentProblem says why Parent is missing (not found, API not served).
	ParentProblem string
	// ParentUnserved is set when ParentProblem is that the cluster does not serve the
	// parent's kind.
	ParentUnserved bool
	// TemplateGroup is set when Parent has no pod in a group, and the group was read
	// from its pod template instead (a batch Job between its pods' deletion and their
	// creation).
	TemplateGroup bool
	// GroupAPI names the group's API ("scheduling.x-k8s.io/v1alpha1 PodGroup") and
	// GroupServed whether the cluster serves it.
	GroupAPI    string
	GroupServed bool
	// GroupFound is whether the group object (or, for plain groups, any member) exists.
	GroupFound bool
	// Spec is the group as muster reads it, with member checks applied.
	Spec engine.GroupSpec
	// Members are the group's pods; Outside are pods of the same owner that are not.
	Members []*corev1.Pod
	Outside []*corev1.Pod
	// Conditions are muster's conditions on the group object.
	Conditions []metav1.Condition
	// Lifecycle is muster's lifecycle record for the group, if it has written one.
	Lifecycle *musterv1alpha1.GroupLifecycle
	// Queue is the group's Queue object, when one exists.
	Queue *musterv1alpha1.Queue
	// Fit is a what-if: placement's diagnosis of the group's unplaced members on the
	// cluster as it is now, computed by explain (or by muster's visibility API for
	// explain), when the group is Queued and they do not fit; FitsNow is true when they
	// fit. Neither is muster's decision: that is the recorded reason in Lifecycle.
	Fit     *placement.Diagnosis
	FitsNow bool
	// FitUnread says why the what-if was not computed although the group waits: the
	// caller may not read the cluster's nodes or pods (a tenant with rights in its
	// namespace only). The recorded reason is all explain shows then.
	FitUnread string
	// FitFrom says where the what-if came from when not from the caller's own reads:
	// muster's visibility API, for a tenant.
	FitFrom string
	// Claims are the members' DRA ResourceClaims by namespace/name (nil: not readable).
	Claims map[string]*resourcev1.ResourceClaim
	// PodEvents are recent events of the member pods (FailedMount, Failed, ...).
	PodEvents []corev1.Event
	// Now is when the facts were gathered.
	Now time.Time
}
