package engine

import (
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
)

// Source names the API a group came from.
type Source string

// The group APIs muster accepts (DESIGN §2).
const (
	// Coscheduling is scheduler-plugins' PodGroup, scheduling.x-k8s.io/v1alpha1, joined by
	// the pod label scheduling.x-k8s.io/pod-group (Kubeflow training-operator, Trainer v2).
	Coscheduling Source = "Coscheduling"
	// Volcano is Volcano's PodGroup, scheduling.volcano.sh/v1beta1, joined by the pod
	// annotation scheduling.k8s.io/group-name.
	Volcano Source = "Volcano"
	// Native is Kubernetes 1.37's PodGroup, scheduling.k8s.io/v1beta1, joined by
	// pod.spec.schedulingGroup.podGroupName.
	Native Source = "Native"
	// Labels is a group with no object: pods labelled muster.dev/group with the
	// muster.dev/min-member annotation.
	Labels Source = "Labels"
	// Single is a pod of muster's with no group: a group of one.
	Single Source = "Single"
)

// GroupSpec is what muster knows of a group from its API object (or its pods, for Labels
// and Single groups), translated by package source. Members are the pods that name it.
type GroupSpec struct {
	// Key identifies the group: SOURCE/namespace/name, so that two APIs' objects of one
	// name do not merge.
	Key       string
	Source    Source
	Namespace string
	Name      string
	// MinMember is the number of members that must be placed and Ready together.
	MinMember int
	// TaskMinimums, when set, are how many members of each task must be among them (a
	// Volcano PodGroup's spec.minTaskMember): a member's task is its pod's annotation
	// volcano.sh/task-spec (TaskAnnotation). The group gathers until each task has its
	// minimum, and is admitted only with a placement for it (see
	// placement.Group.TaskMinimums).
	TaskMinimums map[string]int
	// Queue names the queue; "" means the configured default.
	Queue string
	// QueueCandidates, set by the caller when the group names no queue, are the queues
	// whose namespace selectors admit its namespace. With more than one the group is
	// charged to none of them: it waits with QueueAmbiguous.
	QueueCandidates []string
	// Priority orders groups within a queue, higher first.
	Priority int32
	// PreemptNever keeps the group from preempting others (its PriorityClass's, or a
	// member's, preemptionPolicy is Never).
	PreemptNever bool
	// MinResources, when set, is charged against the queue's quota if it is larger than
	// the plan's requests (the source API's minResources).
	MinResources cluster.Resources
	// Topology is the required and preferred domain label keys.
	Topology placement.Topology
	// ExpectedRuntime, when positive, is how long the group is declared to run once
	// Ready (a source's declared run time); else the engine reads the members'
	// annotation muster.dev/expected-runtime and activeDeadlineSeconds, then history.
	ExpectedRuntime time.Duration
	// Policy overrides the queue's and the configuration's lifecycle defaults.
	Policy PolicyOverrides
	// Owner is the controller that owns the members, when known, for diagnoses such as
	// "the PyTorchJob declares 9 replicas but 8 pods joined the group".
	Owner *Owner
	// OwnerFailed, when set, says that the members' owner failed for good (see
	// source.OwnerFailure): the group fails at once with reason OwnerFailed.
	OwnerFailed string
	// Stopped, when set, says a user stopped the group (the muster.dev/stopped
	// annotation): the engine evicts what it holds and keeps it out of the queue until
	// Stopped is cleared.
	Stopped bool
	// Invalid lists problems with the group's definition, each naming the field and the
	// value. A group with problems is not scheduled; the problems become its condition.
	Invalid []string
	// GroupClaims are a native PodGroup's spec.resourceClaims: claims of its members
	// that are allocated once for the group and reserved for ClaimConsumer, the
	// PodGroup, rather than for each member.
	GroupClaims   []schedulingv1beta1.PodGroupResourceClaim
	ClaimConsumer *resourcev1.ResourceClaimConsumerReference
	// ObjectOwner, for a group with an object, is the UID of the pod that owns the object
	// as its controller, when a pod does: a LeaderWorkerSet's Volcano PodGroup is owned by
	// the group's leader pod, and the garbage collector deletes it with that pod. When
	// muster evicted that pod, the object's going is its own doing, and the group keeps
	// its state for an object of the same name (see Engine.RemoveGroup).
	ObjectOwner types.UID
	// Past is what the group's lifecycle record says of it, when an earlier scheduler
	// process wrote one: the engine resumes the group from it (its attempts, failures,
	// backoff or Failed verdict) the first time it sees the group.
	Past *lifecycle.Past
}

// PolicyOverrides are per-group lifecycle settings; nil fields fall back to the queue's
// defaults, then the configuration's.
type PolicyOverrides struct {
	StartTimeout    *time.Duration
	RecoveryTimeout *time.Duration
	MaxRetries      *int
	BackoffBase     *time.Duration
	BackoffMax      *time.Duration
}

// Owner is the workload controller object behind a group's members.
type Owner struct {
	APIVersion string
	Kind       string
	Name       string
	// Replicas is the number of pods the owner declares, or 0 when unknown.
	Replicas int
}
