package sim

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
)

// PodByPod models the default kube-scheduler without gang scheduling: each pending pod is
// placed on its own, in arrival order, wherever it fits now, with the same predicates as
// muster. Groups mean nothing to it, so two jobs can each hold part of the cluster and wait
// for the rest forever. A pod that does not fit waits until capacity is freed, as in the
// scheduler's unschedulable queue.
type PodByPod struct {
	snap  *cluster.Snapshot
	queue *podQueue
}

var _ Scheduler = (*PodByPod)(nil)

// NewPodByPod returns an empty pod-by-pod scheduler.
func NewPodByPod() *PodByPod {
	return &PodByPod{snap: cluster.New(nil, nil), queue: newPodQueue(func(a, b *queued) int { return a.seq - b.seq })}
}

// SetNode adds or updates a node.
func (s *PodByPod) SetNode(n *corev1.Node) {
	s.snap.SetNode(n)
	s.queue.retryAll = true
}

// RemoveNode removes a node.
func (s *PodByPod) RemoveNode(name string) { s.snap.RemoveNode(name) }

// SetPod records a pod; unbound live pods wait for a node.
func (s *PodByPod) SetPod(p *corev1.Pod, groupKey string) {
	key := cluster.PodKey(p)
	if freesCapacity(s.snap, key, p) {
		s.queue.retryAll = true
	}
	s.snap.AddPod(p)
	if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
		s.queue.set(key, p, groupKey)
	} else {
		s.queue.remove(key)
	}
}

// RemovePod forgets a pod.
func (s *PodByPod) RemovePod(key string) {
	if freesCapacity(s.snap, key, nil) {
		s.queue.retryAll = true
	}
	s.snap.RemovePod(key)
	s.queue.remove(key)
}

// SetGroup is ignored: the default scheduler does not know groups.
func (s *PodByPod) SetGroup(engine.GroupSpec) {}

// RemoveGroup is ignored.
func (s *PodByPod) RemoveGroup(string) {}

// Step places every pending pod that fits, in arrival order.
func (s *PodByPod) Step(time.Time) engine.Output {
	var out engine.Output
	pass := newPass(s.snap)
	for _, it := range s.queue.pass() {
		node := pass.placeOne(it)
		if node == "" {
			continue
		}
		s.snap.Bind(it.pod, node)
		pass.update()
		s.queue.remove(it.key)
		out.AddBind(it.group, it.key, node)
	}
	return out
}
