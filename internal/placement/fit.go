package placement

import (
	"fmt"
	"strings"

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
	// In the forms' canonical order of resources (no scarce resource tested first): the
	// first reason is the first short resource by name.
	sh := &shape{form: formsOf([]Member{m}, nil)[0]}
	sh.resolve(s)
	if r, failed := staticReason(n, sh, checkHealth); failed {
		return r, false
	}
	p := &placer{snap: s, health: checkHealth, shapes: []*shape{sh}}
	p.markDRA()
	p.begin(sh)
	if r, failed := p.filterReason(n, sh); failed {
		return r, false
	}
	if rs := resourceReasons(n, sh); len(rs) > 0 {
		return rs[0], false
	}
	return NodeReason{}, true
}

// VolumesOn returns the volume decisions for member m on node name before m is bound there
// (Assignment.Provision and BindVolumes), as Place makes them: a restarted muster
// completing a plan in flight makes them again.
func VolumesOn(s *cluster.Snapshot, name string, m Member) (kubefit.Volumes, error) {
	n := s.Node(name)
	if n == nil || !kubefit.HasClaims(m.Pod) {
		return kubefit.Volumes{}, nil
	}
	h, err := kubefit.HostOf(s)
	if err != nil {
		return kubefit.Volumes{}, err
	}
	c, err := h.Begin(s, m.Pod)
	if err != nil {
		return kubefit.Volumes{}, err
	}
	return c.Volumes(m.Pod, n)
}

// ClaimsOn allocates member m's DRA claims on node name before m is bound there
// (Assignment.Claims), as Place does, and assumes them on s for the members after it: a
// restarted muster completing a plan in flight allocates them again. A claim allocated
// and reserved for m already is kept.
func ClaimsOn(s *cluster.Snapshot, name string, m Member) ([]kubefit.ClaimAllocation, error) {
	n := s.Node(name)
	if n == nil {
		return nil, nil
	}
	h, err := kubefit.HostOf(s)
	if err != nil {
		return nil, err
	}
	if !kubefit.HasResourceClaims(m.Pod) {
		classes, err := h.ExtendedClasses(s, m.requests())
		if err != nil || len(classes) == 0 {
			return nil, err
		}
	}
	c, err := h.Begin(s, m.Pod)
	if err != nil {
		return nil, err
	}
	if v := c.Filter(n); !v.OK() {
		return nil, fmt.Errorf("%s: %s", v.Plugin, strings.Join(v.Reasons, ", "))
	}
	claims, err := c.Reserve(m.Pod, n)
	if err != nil {
		return nil, err
	}
	if _, err := kubefit.Assume(s, m.Pod, claims); err != nil {
		return nil, err
	}
	return claims, nil
}
