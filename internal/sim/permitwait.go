package sim

import (
	"cmp"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
)

// PermitWait models kube-scheduler with scheduler-plugins' Coscheduling: pods are taken
// one at a time in Coscheduling's queue order (group priority, then group creation, then
// pod), each placed alone with the same predicates as muster. A placed pod is reserved
// and waits at the Permit barrier until MinMember members of its group are reserved or
// bound; then all of them are bound together. If the group is not whole within Timeout of
// its first waiting member, every waiting member is rejected, its reservation released,
// and the group is denied for Backoff before its pods are tried again. Reserved capacity
// is held by an incomplete group the whole time (the world counts it, see Reserver).
//
// Not modelled: PostFilter's optimistic rejection of a group's waiting pods when one
// member fails Filter, and per-pod scheduling backoff; pods are retried whenever capacity
// is freed or a group's denial ends.
type PermitWait struct {
	// Timeout is how long members wait at the permit barrier (permitWaitingTimeSeconds).
	Timeout time.Duration
	// Backoff is how long a timed-out group is denied before its pods are tried again.
	Backoff time.Duration

	snap   *cluster.Snapshot
	queue  *podQueue
	groups map[string]*pwGroup
	// waiting holds groups with reserved members; denied, groups in backoff.
	waiting, denied map[string]*pwGroup
	changes         map[string]int64
	// podGroup maps pod keys to group keys; seq numbers groups in creation order.
	podGroup map[string]string
	seq      int
}

var (
	_ Scheduler = (*PermitWait)(nil)
	_ Reserver  = (*PermitWait)(nil)
)

// pwGroup is a group as Coscheduling sees it.
type pwGroup struct {
	key       string
	minMember int
	priority  int32
	seq       int
	// reserved are members placed and waiting at the barrier, in order.
	reserved []reservation
	// deadline is when the first waiting member's permit times out.
	deadline time.Time
	// deniedUntil is when the group's backoff ends.
	deniedUntil time.Time
	// bound is the group's live members that are bound.
	bound map[string]bool
}

type reservation struct {
	it   *queued
	node string
}

// NewPermitWait returns a Coscheduling model with the given permit timeout and backoff.
func NewPermitWait(timeout, backoff time.Duration) *PermitWait {
	s := &PermitWait{
		Timeout: timeout, Backoff: backoff,
		snap:    cluster.New(nil, nil),
		groups:  map[string]*pwGroup{},
		waiting: map[string]*pwGroup{}, denied: map[string]*pwGroup{},
		changes: map[string]int64{}, podGroup: map[string]string{},
	}
	s.queue = newPodQueue(s.less)
	return s
}

// less is Coscheduling's QueueSort: priority, then group creation, then pod arrival.
func (s *PermitWait) less(a, b *queued) int {
	ga, gb := s.group(a.group), s.group(b.group)
	if c := cmp.Compare(gb.priority, ga.priority); c != 0 {
		return c
	}
	if c := cmp.Compare(ga.seq, gb.seq); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

func (s *PermitWait) group(key string) *pwGroup {
	g := s.groups[key]
	if g == nil {
		s.seq++
		g = &pwGroup{key: key, minMember: 1, seq: s.seq, bound: map[string]bool{}}
		s.groups[key] = g
	}
	return g
}

// SetNode adds or updates a node.
func (s *PermitWait) SetNode(n *corev1.Node) {
	s.snap.SetNode(n)
	s.queue.retryAll = true
}

// RemoveNode removes a node.
func (s *PermitWait) RemoveNode(name string) { s.snap.RemoveNode(name) }

// SetGroup records a group's minimum and priority.
func (s *PermitWait) SetGroup(spec engine.GroupSpec) {
	g := s.group(spec.Key)
	g.minMember, g.priority = max(spec.MinMember, 1), spec.Priority
	s.queue.sorted = false
}

// RemoveGroup forgets a group; its pods are removed one by one.
func (s *PermitWait) RemoveGroup(key string) {
	if g := s.groups[key]; g != nil {
		s.release(g)
		delete(s.groups, key)
		delete(s.denied, key)
	}
}

// SetPod records a pod; unbound live pods wait for a node.
func (s *PermitWait) SetPod(p *corev1.Pod, groupKey string) {
	key := cluster.PodKey(p)
	if freesCapacity(s.snap, key, p) {
		s.queue.retryAll = true
	}
	g := s.group(groupKey)
	s.podGroup[key] = groupKey
	if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
		if !s.isReserved(g, key) {
			s.snap.AddPod(p)
			s.queue.set(key, p, groupKey)
		}
		return
	}
	s.snap.AddPod(p)
	s.queue.remove(key)
	if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
		g.bound[key] = true
	} else {
		delete(g.bound, key)
	}
}

func (s *PermitWait) isReserved(g *pwGroup, key string) bool {
	for _, r := range g.reserved {
		if r.it.key == key {
			return true
		}
	}
	return false
}

// RemovePod forgets a pod.
func (s *PermitWait) RemovePod(key string) {
	if freesCapacity(s.snap, key, nil) {
		s.queue.retryAll = true
	}
	if g := s.groups[s.podGroup[key]]; g != nil {
		if s.isReserved(g, key) {
			s.release(g) // a waiting member is gone: the others cannot be permitted
		}
		delete(g.bound, key)
	}
	delete(s.podGroup, key)
	s.snap.RemovePod(key)
	s.queue.remove(key)
}

// ReservationChanges reports groups whose reserved GPUs changed since the last call.
func (s *PermitWait) ReservationChanges() map[string]int64 {
	if len(s.changes) == 0 {
		return nil
	}
	out := s.changes
	s.changes = map[string]int64{}
	return out
}

// release rejects a group's waiting members: their reservations go and they are pending
// again.
func (s *PermitWait) release(g *pwGroup) {
	if len(g.reserved) == 0 {
		return
	}
	for _, r := range g.reserved {
		s.snap.RemovePod(r.it.key)
	}
	g.reserved, g.deadline = nil, time.Time{}
	delete(s.waiting, g.key)
	s.changes[g.key] = 0
	s.queue.retryAll = true
}

// Step times out waiting groups, ends denials that are over, and tries pending pods.
func (s *PermitWait) Step(now time.Time) engine.Output {
	for _, g := range s.waiting {
		if !g.deadline.After(now) {
			s.release(g)
			g.deniedUntil = now.Add(s.Backoff)
			s.denied[g.key] = g
		}
	}
	for key, g := range s.denied {
		if !g.deniedUntil.After(now) {
			delete(s.denied, key)
			s.queue.retryAll = true
		}
	}
	var out engine.Output
	pass := newPass(s.snap)
	for _, it := range s.queue.pass() {
		g := s.group(it.group)
		if s.denied[g.key] != nil || s.isReserved(g, it.key) {
			continue
		}
		node := pass.placeOne(it)
		if node == "" {
			continue
		}
		s.reserve(g, it, node, now, &out)
		pass.update()
	}
	out.WakeAt = s.wakeAt()
	return out
}

// reserve holds node for it and permits the group once it is whole.
func (s *PermitWait) reserve(g *pwGroup, it *queued, node string, now time.Time, out *engine.Output) {
	s.snap.Bind(it.pod, node)
	g.reserved = append(g.reserved, reservation{it: it, node: node})
	if len(g.reserved)+len(g.bound) < g.minMember {
		if g.deadline.IsZero() {
			g.deadline = now.Add(s.Timeout)
			s.waiting[g.key] = g
		}
		var gpus int64
		for _, r := range g.reserved {
			gpus += gpusOf(r.it.pod)
		}
		s.changes[g.key] = gpus
		return
	}
	for _, r := range g.reserved {
		s.queue.remove(r.it.key)
		out.AddBind(g.key, r.it.key, r.node)
	}
	if !g.deadline.IsZero() {
		s.changes[g.key] = 0
	}
	g.reserved, g.deadline = nil, time.Time{}
	delete(s.waiting, g.key)
}

func (s *PermitWait) wakeAt() time.Time {
	var w time.Time
	earlier := func(t time.Time) {
		if w.IsZero() || t.Before(w) {
			w = t
		}
	}
	for _, g := range s.waiting {
		earlier(g.deadline)
	}
	for _, g := range s.denied {
		earlier(g.deniedUntil)
	}
	return w
}
