package placement

import (
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
)

// FitsOn checks whether member m fits node name of the snapshot now, by the same
// predicates Place uses (readiness, cordon, node affinity and selector, taints, the
// hosted kube-scheduler filters when m needs them, then resources), and returns the first
// reason it does not; ok is true when it fits. A restarted muster checks a plan in flight
// with it before it completes the plan.
func FitsOn(s *cluster.Snapshot, name string, m Member) (reason NodeReason, ok bool) {
	n := s.Node(name)
	if n == nil {
		return NodeReason{Kind: NodeNotFound, Detail: name}, false
	}
	sh := shapesOf([]Member{m})[0]
	if r, failed := staticReason(n, sh, checkHealth); failed {
		return r, false
	}
	p := &placer{snap: s, health: checkHealth}
	p.begin(sh)
	if r, failed := p.filterReason(n, sh); failed {
		return r, false
	}
	if rs := resourceReasons(n, sh); len(rs) > 0 {
		return rs[0], false
	}
	return NodeReason{}, true
}

// ProvisionsOn returns the claims of member m to provision on node name before m is bound
// there (Assignment.Provision), as Place decides them: a restarted muster completing a
// plan in flight names them again.
func ProvisionsOn(s *cluster.Snapshot, name string, m Member) ([]string, error) {
	n := s.Node(name)
	if n == nil || !hasClaims(m.Pod) {
		return nil, nil
	}
	h, err := kubefit.HostOf(s)
	if err != nil {
		return nil, err
	}
	c, err := h.Begin(s, m.Pod)
	if err != nil {
		return nil, err
	}
	return c.Provisions(m.Pod, n)
}
