package engine

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// The decisions below are the shell's to carry out, but the engine's to make: they read
// a group's status and a pod, and nothing else.

// Reasons of the evictions that replace one failed member of an admitted group.
const (
	// ReasonKubeletRejected: the kubelet rejected the member (OutOf<resource>), because
	// another scheduler bound a pod to its node after muster's snapshot. The member is
	// placed again alone; the group's attempt goes on (DESIGN §7).
	ReasonKubeletRejected = "KubeletRejected"
	// ReasonMemberFailed: a member with no controller owner failed while its group was
	// running (its node went down, or it exited with an error). muster is the
	// member's only controller, so it creates it again, and the group recovers as it
	// would with a job controller (DESIGN §4, §7).
	ReasonMemberFailed = "MemberFailed"
)

// Replacement decides whether failed member p of group gk, in phase, is replaced alone
// rather than with its whole group, and returns the eviction that does it:
//   - a member the kubelet rejected (OutOf<resource>) while its group is admitted: its
//     controller, or muster when it has none, creates it again, and the engine places
//     the new pod alone, in the group's attempt;
//   - a member with no controller owner that failed while its group is Running or
//     Recovering: muster creates it again, as a job controller would, and the engine
//     places the new pod as a replacement; if the group is not whole again within its
//     recovery-timeout, the engine evicts the whole group.
//
// Other failures are left to the lifecycle: a member that fails while its group starts
// makes the start-timeout evict the group, and a failed member with a controller is the
// controller's to replace.
func Replacement(phase lifecycle.Phase, p *corev1.Pod, gk string) (Eviction, bool) {
	ev := Eviction{Group: gk, Pod: p.Namespace + "/" + p.Name}
	switch phase {
	case lifecycle.Binding, lifecycle.Starting, lifecycle.Running, lifecycle.Recovering:
	default:
		return ev, false
	}
	switch {
	case cluster.KubeletRejected(p):
		ev.Reason = ReasonKubeletRejected
		ev.Message = fmt.Sprintf("the kubelet of %s rejected member %s (%s: %s); it is placed again alone",
			p.Spec.NodeName, p.Name, p.Status.Reason, p.Status.Message)
	case (phase == lifecycle.Running || phase == lifecycle.Recovering) && metav1.GetControllerOf(p) == nil:
		ev.Reason = ReasonMemberFailed
		ev.Message = fmt.Sprintf("member %s failed on %s (%s) and has no controller; muster creates it again",
			p.Name, p.Spec.NodeName, cluster.PodFailure(p))
	default:
		return ev, false
	}
	return ev, true
}

// ResumeAt is when a Job suspended to evict a group in state st is resumed: at the end
// of the group's backoff, never (zero) once it has Failed, else at once.
func (st Status) ResumeAt(now time.Time) time.Time {
	switch {
	case st.Phase == lifecycle.Failed:
		return time.Time{}
	case st.Phase == lifecycle.Backoff && st.WakeAt.After(now):
		return st.WakeAt
	}
	return now
}
