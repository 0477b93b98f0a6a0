package sim

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/placement"
)

// PodByPod models the default kube-scheduler without gang scheduling: each pending pod is
// placed on its own, in arrival order, wherever it fits now, with the same predicates as
// muster. Groups mean nothing to it, so two jobs can each hold part of the cluster and wait
// for the rest forever.
type PodByPod struct {
	snap    *cluster.Snapshot
	pending map[string]*corev1.Pod
	arrival map[string]int
	group   map[string]string
	seq     int
}

var _ Scheduler = (*PodByPod)(nil)

// NewPodByPod returns an empty pod-by-pod scheduler.
func NewPodByPod() *PodByPod {
	return &PodByPod{snap: cluster.New(nil, nil), pending: map[string]*corev1.Pod{}, arrival: map[string]int{}, group: map[string]string{}}
}

// SetNode adds or updates a node.
func (s *PodByPod) SetNode(n *corev1.Node) { s.snap.SetNode(n) }

// RemoveNode removes a node.
func (s *PodByPod) RemoveNode(name string) { s.snap.RemoveNode(name) }

// SetPod records a pod; unbound live pods wait for a node.
func (s *PodByPod) SetPod(p *corev1.Pod, groupKey string) {
	key := cluster.PodKey(p)
	s.group[key] = groupKey
	s.snap.AddPod(p)
	if _, ok := s.arrival[key]; !ok {
		s.seq++
		s.arrival[key] = s.seq
	}
	if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
		s.pending[key] = p
	} else {
		delete(s.pending, key)
	}
}

// RemovePod forgets a pod.
func (s *PodByPod) RemovePod(key string) {
	s.snap.RemovePod(key)
	delete(s.pending, key)
	delete(s.arrival, key)
	delete(s.group, key)
}

// SetGroup is ignored: the default scheduler does not know groups.
func (s *PodByPod) SetGroup(engine.GroupSpec) {}

// RemoveGroup is ignored.
func (s *PodByPod) RemoveGroup(string) {}

// Step places every pending pod that fits, in arrival order.
func (s *PodByPod) Step(time.Time) engine.Output {
	keys := make([]string, 0, len(s.pending))
	for k := range s.pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return s.arrival[a] - s.arrival[b] })
	var out engine.Output
	for _, key := range keys {
		p := s.pending[key]
		plan, _ := placement.Place(s.snap, placement.Group{Name: key, MinMember: 1, Members: []placement.Member{{Name: key, Pod: p}}}, placement.Options{})
		if plan == nil {
			continue
		}
		node := plan.Assignments[0].Node
		plan.Revert()
		s.snap.Bind(p, node)
		delete(s.pending, key)
		out.Binds = append(out.Binds, engine.Bind{Group: s.group[key], Pod: key, Node: node})
	}
	return out
}
