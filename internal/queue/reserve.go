package queue

import (
	"cmp"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// reservationNodes returns the nodes a starving group would use if the pods now on them
// finished, with what its plan takes on each, chosen so that its wait is the shortest: the
// nodes the estimator's forecast planned it on (planned), where the capacity it needs is expected to be free soonest, when the
// group fits the empty cluster restricted to them; else among the nodes with the most
// free scarce resource now, the group placed on the empty cluster restricted to the k
// most-free nodes, for the smallest k that fits (by bisection). It returns nil when the
// group does not fit the empty cluster at all.
func reservationNodes(s *cluster.Snapshot, it *item, planned []string) ([]string, map[string]cluster.Resources) {
	if nodes, shares := plannedReservation(s, it, planned); nodes != nil {
		return nodes, shares
	}
	scarce := scarceOf(it)
	nodes := slices.Clone(s.Nodes()) // sorted by name, which breaks ties below
	slices.SortStableFunc(nodes, func(a, b *cluster.NodeInfo) int {
		return cmp.Compare(b.Free(scarce), a.Free(scarce))
	})
	rank := make(map[string]int, len(nodes))
	for i, n := range nodes {
		rank[n.Name()] = i
	}
	empty := s.Empty()
	try := func(k int) *placement.Plan {
		plan := placement.Try(empty, it.keyed, placement.Options{
			Exclude: func(node string) bool { return rank[node] >= k },
		})
		if plan != nil {
			plan.Revert()
		}
		return plan
	}
	best := try(len(nodes))
	if best == nil {
		return nil, nil
	}
	lo, hi := 1, len(nodes) // the smallest k that fits is in [lo, hi]; best fits hi
	for lo < hi {
		mid := lo + (hi-lo)/2
		if plan := try(mid); plan != nil {
			hi, best = mid, plan
		} else {
			lo = mid + 1
		}
	}
	return nodesOf(best), it.sharesOf(best)
}

// plannedReservation returns the reservation on the nodes the forecast planned the group
// on, when it fits the empty cluster restricted to them, else nil. It reads only the empty
// cluster (Snapshot.Empty), not what is bound now.
func plannedReservation(s *cluster.Snapshot, it *item, planned []string) ([]string, map[string]cluster.Resources) {
	if len(planned) == 0 {
		return nil, nil
	}
	in := nodeSet(planned)
	plan := placement.Try(s.Empty(), it.keyed, placement.Options{Exclude: func(node string) bool { return !in[node] }})
	if plan == nil {
		return nil, nil
	}
	plan.Revert()
	return nodesOf(plan), it.sharesOf(plan)
}

// reservedNodes is a starving group's reservation nodes computed on snapshot version
// version before any admission of the pass, with the nodes its forecast planned it on.
// When they are those nodes (onPlanned), they were found on the empty cluster alone,
// and hold while it stays the same view (empty).
type reservedNodes struct {
	it        *item
	version   uint64
	planned   []string
	onPlanned bool
	empty     *cluster.Snapshot
	nodes     []string
	shares    map[string]cluster.Resources
}

// reservationOf is reservationNodes, computed again only when the snapshot or the
// forecast's plan changed: a starving group refreshes its reservation on every pass that
// reaches it, and on a snapshot version of an earlier pass (before any admission) the
// bisection of empty-cluster placements would find the same nodes.
func (p *pass) reservationOf(it *item) ([]string, map[string]cluster.Resources) {
	var planned []string
	if p.m.est != nil {
		planned = p.m.est.PlannedNodes(it.Key)
	}
	last := &p.m.lastReserved
	reusable := p.versioned && len(p.res.Admitted) == 0
	if last.it == it && slices.Equal(last.planned, planned) &&
		(last.onPlanned && last.empty == p.snap.Empty() || reusable && last.version == p.m.placedVersion) {
		return last.nodes, last.shares
	}
	nodes, shares := plannedReservation(p.snap, it, planned)
	onPlanned := nodes != nil
	if !onPlanned {
		nodes, shares = reservationNodes(p.snap, it, nil)
	}
	if reusable || onPlanned {
		*last = reservedNodes{it: it, version: p.m.placedVersion, planned: slices.Clone(planned), onPlanned: onPlanned,
			empty: p.snap.Empty(), nodes: nodes, shares: shares}
	}
	return nodes, shares
}

// sharesOf is what the plan's members ask of each node it uses: the part of a reserved
// node that the starving group needs, the rest being open to the groups behind it.
func (it *item) sharesOf(plan *placement.Plan) map[string]cluster.Resources {
	out := map[string]cluster.Resources{}
	for _, a := range plan.Assignments {
		if out[a.Node] == nil {
			out[a.Node] = cluster.Resources{}
		}
		out[a.Node].Add(it.requests[a.Member])
	}
	return out
}

// nodesOf returns the plan's nodes, sorted, each once.
func nodesOf(plan *placement.Plan) []string {
	var out []string
	for _, a := range plan.Assignments {
		out = append(out, a.Node)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// scarceOf is the resource a group's wait depends on: the extended resource it asks most
// of in total (nvidia.com/gpu, typically), or cpu when it asks for none. It matches what
// placement packs on.
func scarceOf(it *item) corev1.ResourceName {
	totals := cluster.Resources{}
	for _, r := range it.requests {
		for name, v := range r {
			if cluster.IsExtended(name) {
				totals[name] += v
			}
		}
	}
	best, bestV := corev1.ResourceCPU, int64(0)
	for _, name := range totals.Names() {
		if totals[name] > bestV {
			best, bestV = name, totals[name]
		}
	}
	return best
}

// ReserveForPreemption reserves nodes for the queued group key, of priority prio, while
// the groups preempted for it release them: no other group of priority prio or lower
// may use them, wherever it comes in order, until key is admitted, leaves the queue,
// waits for anything but room, or Unreserve is called. Several groups may hold such a
// reservation at once, each for the nodes of its own victims; it replaces key's own, and
// the starving group's reservation, whose nodes the preemption may be freeing. nodes may
// repeat and be in any order.
//
// reclaim says the victims were evicted to give key's queue back the quota its cohort
// lent: until the reservation ends, no other queue of the cohort may borrow, so that
// what the victims release is not lent again before key is admitted.
func (m *Manager) ReserveForPreemption(key string, prio int32, nodes []string, reclaim bool, now time.Time) {
	m.preempt[key] = &Reservation{Key: key, Nodes: slices.Compact(slices.Sorted(slices.Values(nodes))), Since: now,
		Preemption: true, Reclaim: reclaim, Priority: prio}
	m.reserve = nil
}

// closes reports whether the nodes of r, a reservation for preemption, are closed to
// group key of priority prio: as kube-scheduler's nominated nodes, they are open only to
// their holder and to groups of higher priority, wherever those come in order.
func (r *Reservation) closes(key string, prio int32) bool {
	return r.Key != key && prio <= r.Priority
}

// ClosedByPreemption returns the nodes being freed by preemption that group key of
// priority prio may not use, or nil.
func (m *Manager) ClosedByPreemption(key string, prio int32) map[string]bool {
	var closed map[string]bool
	for _, r := range m.preempt {
		if !r.closes(key, prio) {
			continue
		}
		if closed == nil {
			closed = map[string]bool{}
		}
		for _, n := range r.Nodes {
			closed[n] = true
		}
	}
	return closed
}

// Unreserve drops key's reservations.
func (m *Manager) Unreserve(key string) {
	if m.reserve != nil && m.reserve.Key == key {
		m.reserve = nil
	}
	delete(m.preempt, key)
}

// reclaiming reports whether a group of another queue of q's cohort is taking back its
// queue's quota (see ReserveForPreemption).
func (m *Manager) reclaiming(q Queue) bool {
	for key, r := range m.preempt {
		if it := m.entries[key]; r.Reclaim && it != nil && it.Queue != q.Name && m.queues[it.Queue].Cohort == q.Cohort {
			return true
		}
	}
	return false
}

// Reservations returns the reservations in force: the starving group's first, then those
// for preemption by key.
func (m *Manager) Reservations() []Reservation {
	var out []Reservation
	if m.reserve != nil {
		out = append(out, m.reserve.clone())
	}
	if len(m.preempt) == 0 {
		return out // every pass asks: without a preemption, it sorts nothing
	}
	for _, key := range slices.Sorted(maps.Keys(m.preempt)) {
		out = append(out, m.preempt[key].clone())
	}
	return out
}

func (r *Reservation) clone() Reservation {
	c := *r
	c.Nodes = slices.Clone(r.Nodes)
	return c
}

// Starving returns the key of the starving group that holds the reservation, or "".
func (m *Manager) Starving() string {
	if m.reserve == nil || m.entries[m.reserve.Key] == nil {
		return ""
	}
	return m.reserve.Key
}
