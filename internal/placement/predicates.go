package placement

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/muster-sched/muster/internal/cluster"
)

// health says whether a predicate check counts a node's transient state (NotReady,
// cordoned). The Impossible check ignores it: such nodes may come back.
type health bool

const (
	checkHealth  health = true
	ignoreHealth health = false
)

// staticReason checks the predicates that do not depend on what is bound to the node:
// readiness, cordon, node affinity and selector, taints. It returns the first failing
// reason, as kube-scheduler's filters would report it, and false when the node passes.
func staticReason(n *cluster.NodeInfo, s *shape, h health) (NodeReason, bool) {
	node := n.Node
	if h == checkHealth {
		if !n.Ready() {
			return NodeReason{Kind: NodeNotReady}, true
		}
		if node.Spec.Unschedulable && !toleratesUnschedulable(s.pod) {
			return NodeReason{Kind: NodeUnschedulable}, true
		}
	}
	if ok, err := s.affinity.Match(node); err != nil || !ok {
		return NodeReason{Kind: NodeAffinityMismatch}, true
	}
	if len(node.Spec.Taints) == 0 {
		return NodeReason{}, false // most nodes: no taint to look for a toleration of
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints,
		s.pod.Spec.Tolerations, hardTaint, true)
	if untolerated {
		return NodeReason{Kind: UntoleratedTaint, Detail: taintText(taint)}, true
	}
	return NodeReason{}, false
}

// hardTaint selects the taint effects that forbid scheduling, as upstream TaintToleration.
func hardTaint(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// toleratesUnschedulable mirrors upstream NodeUnschedulable: a pod that tolerates the
// node.kubernetes.io/unschedulable:NoSchedule taint may go to a cordoned node.
func toleratesUnschedulable(p *corev1.Pod) bool {
	t := &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, t, true)
}

func taintText(t corev1.Taint) string {
	if t.Value == "" {
		return "{" + t.Key + "}"
	}
	return "{" + t.Key + ": " + t.Value + "}"
}

// resourceReasons lists why a node that passed the static checks cannot take one more
// member of shape s now: one reason per insufficient resource, as upstream NodeResourcesFit.
func resourceReasons(n *cluster.NodeInfo, s *shape) []NodeReason {
	var t tally
	roomOrReasons(&t, n, s)
	out := make([]NodeReason, len(t))
	for i, c := range t {
		out[i] = c.NodeReason
	}
	return out
}

// roomOrReasons is how many members of s the node can take now (s.fits), and when none,
// counts resourceReasons into t, in s's test order. A survey needs both of every node:
// reading each free amount once for both halves its lookups.
func roomOrReasons(t *tally, n *cluster.NodeInfo, s *shape) int {
	count, short := int64(1<<31-1), false
	for i, name := range s.names {
		if s.delegated(n, i) {
			continue
		}
		free := n.FreeOf(s.ids[i])
		switch {
		case free >= s.needs[i]:
			count = min(count, free/s.needs[i])
		case name == corev1.ResourcePods:
			t.add(NodeReason{Kind: TooManyPods})
			short = true
		default:
			t.add(NodeReason{Kind: InsufficientResource, Detail: string(name)})
			short = true
		}
	}
	if short {
		return 0
	}
	return int(count)
}
