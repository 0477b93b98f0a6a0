package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

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

// noteFailed records a member of muster's that failed, for replaceFailed to decide on
// once the engine has seen the failure.
func (s *scheduler) noteFailed(key string, p *corev1.Pod) {
	if p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp == nil {
		s.failed[key] = true
	}
}

// replaceFailed evicts the failed members that must be replaced one by one rather than
// with their whole group:
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
// controller's to replace. Each failed pod is considered once, after the Step that saw
// it.
func (s *scheduler) replaceFailed(ctx context.Context) {
	for _, key := range sortedKeys(s.failed) {
		delete(s.failed, key)
		p := s.pods[key]
		if p == nil || p.Status.Phase != corev1.PodFailed || p.DeletionTimestamp != nil || !s.podIsOurs(p) {
			continue
		}
		gk := s.groupKeyOf(p)
		st, ok := s.eng.Group(gk)
		if !ok {
			continue
		}
		if ev, ok := replacement(st.Phase, p, gk); ok {
			s.log.Info("replacing a failed member", "group", gk, "pod", key, "reason", ev.Reason)
			if obj := s.objects[gk]; obj != nil {
				s.event(obj, corev1.EventTypeWarning, ev.Reason, ev.Message) // evictPod records it on the pod
			}
			s.evictPod(ctx, p, ev)
		}
	}
}

// replacement decides whether failed member p of group gk, in phase, is replaced alone,
// and returns the eviction that does it.
func replacement(phase lifecycle.Phase, p *corev1.Pod, gk string) (engine.Eviction, bool) {
	ev := engine.Eviction{Group: gk, Pod: podKey(p)}
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
