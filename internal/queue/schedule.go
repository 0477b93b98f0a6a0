package queue

import (
	"slices"
	"strings"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// Admission is a group Schedule admitted: its plan is assumed on the snapshot and its
// charge is recorded against its queue.
type Admission struct {
	Entry
	// Plan is where the members go; the binder binds exactly this.
	Plan *placement.Plan
	// Charge is what the group holds of its queue's quota until Release.
	Charge cluster.Resources
}

// Waiting is a group that stays queued after Schedule, with why. Its Entry is the
// Manager's record of the group: read it, do not change it.
type Waiting struct {
	*Entry
	Reason Reason
	// Position is the group's place, from 1, among the waiting groups of its queue.
	Position int
}

// Reservation holds nodes for a starving group: the nodes it would use if the pods on them
// finished. Groups ordered behind it may not use them.
type Reservation struct {
	// Key is the group the nodes are held for.
	Key string
	// Nodes are the reserved nodes, sorted.
	Nodes []string
	// Since is when the group first got a reservation.
	Since time.Time
	// Preemption marks nodes being freed for the group by preemption (see
	// Manager.ReserveForPreemption) rather than reserved for a starving group.
	Preemption bool
	// Reclaim marks a preemption that takes back quota its holder's cohort lent.
	Reclaim bool
	// Priority is the group's priority, for a preemption's reservation.
	Priority int32
	// Start is when the starving group is expected to start: when its nodes are
	// expected to be free (see Estimator); zero when unknown, because some group on
	// them declares no run time and has no history.
	Start time.Time
	// Shares are, for a starving group's reservation, what its plan takes of each
	// reserved node once the pods on them have finished; the groups behind it that may
	// not backfill may still use the rest. Nil for a preemption's reservation, whose
	// nodes are closed whole.
	Shares map[string]cluster.Resources
}

// Result is what one Schedule call decided.
type Result struct {
	// Admitted lists the groups admitted, in order; they have left the queue.
	Admitted []Admission
	// Waiting lists the groups still queued, in order, with why. Its array is the
	// Manager's, reused by the next Schedule or ScheduleChanges: a caller that keeps
	// the list past that copies it.
	Waiting []Waiting
	// Reservations are the reservations in force after the call (see
	// Manager.Reservations).
	Reservations []Reservation
	// Unchanged counts, by reason, the waiting groups ScheduleChanges did not list in
	// Waiting because they wait for the same reason as before; Schedule lists every
	// group. Like Waiting's, its array is reused by the next call.
	Unchanged []Unchanged
}

// Schedule decides every queued group, in order, on snapshot s at time now. Admitted
// groups' plans stay assumed on s, they leave the queue, and their charges are recorded;
// every other group waits, and s is as it was for it.
//
// When a group fails placement, the later groups with the same placement.Signature and
// the same exclusions fail the same way in this call without being placed again: the
// snapshot only fills up during a call.
func (m *Manager) Schedule(s *cluster.Snapshot, now time.Time) Result {
	return m.schedule(s, now, false, 0)
}

// schedule is Schedule, or ScheduleChanges when changes is set; version is the
// snapshot's version for ScheduleChanges (see placedFailure), ignored by Schedule.
func (m *Manager) schedule(s *cluster.Snapshot, now time.Time, changes bool, version uint64) Result {
	if m.reserve != nil && m.entries[m.reserve.Key] == nil {
		m.reserve = nil
	}
	m.passes++
	p := &pass{m: m, snap: s, now: now, id: m.passes, failed: map[failKey]Reason{}, shares: map[string]float64{},
		versioned: changes}
	if changes && version != m.placedVersion {
		clear(m.placed)
		m.placedVersion = version
	}
	// The list reuses the last pass's array: made anew, it was a third of the bytes a
	// replay allocated.
	p.res.Waiting, p.res.Unchanged = m.waiting[:0], m.unchanged[:0]
	p.preempted = m.preemptedNodes()
	// trySkip is tried after 1, 2, 4, ... failures, and not while a class it found could
	// be admitted has not been reached.
	fails, nextTry := 0, 1
	for it := range p.walk() {
		p.decide(it)
		if !changes {
			continue
		}
		if p.blocker == it.cls {
			p.blocker = nil
		}
		if it.pass != p.id { // admitted
			continue
		}
		if fails++; fails >= nextTry && p.blocker == nil {
			nextTry = 2 * fails
			if p.trySkip() {
				break
			}
		}
	}
	for _, it := range p.gone {
		m.order.removeFromLane(it)
	}
	if !changes {
		positions := map[string]int{}
		for i := range p.res.Waiting {
			w := &p.res.Waiting[i]
			positions[w.Queue]++
			w.Position = positions[w.Queue]
		}
	}
	m.waiting, m.unchanged = p.res.Waiting, p.res.Unchanged
	p.res.Reservations = m.Reservations()
	return p.res
}

// preemptedNodes returns the reservations for preemption with their node sets, by key,
// dropping those of groups no longer queued.
func (m *Manager) preemptedNodes() []preemptedNodes {
	var out []preemptedNodes
	for key, r := range m.preempt {
		if m.entries[key] == nil {
			delete(m.preempt, key)
			continue
		}
		out = append(out, preemptedNodes{Reservation: r, nodes: nodeSet(r.Nodes)})
	}
	slices.SortFunc(out, func(a, b preemptedNodes) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// pass is one Schedule call.
type pass struct {
	m    *Manager
	snap *cluster.Snapshot
	now  time.Time
	// id is the pass's number (Manager.passes).
	id uint64
	// gone holds the items admitted, to take out of the walk's lanes after it.
	gone []*item
	// versioned says the caller gave the snapshot's version: placement failures of
	// earlier passes on the same version may be reused (see placedFailure).
	versioned bool
	// blocker is a class whose groups trySkip found could be admitted, until the walk
	// reaches one of them.
	blocker *class
	// verdicts are trySkip's, valid while stamp holds.
	verdicts map[verdictKey]*verdictOf
	stamp    skipStamp
	// fresh holds the placement failures verdict found, by cache key, for decide while
	// freshStamp holds: until then they are what placing the group again would find.
	fresh      map[failKey]Reason
	freshStamp skipStamp
	// failed caches placement failures by signature and exclusion.
	failed map[failKey]Reason
	// behind is set once the walk has passed the starving group's reservation's holder:
	// from then on its nodes are excluded.
	behind bool
	// preempted are the reservations for preemption, by key, with their node sets.
	preempted []preemptedNodes
	// shares caches each queue's weighted share until its usage changes.
	shares map[string]float64
	// closed is the array of closedTo's last list.
	closed []closedNodes
	res    Result
}

// decide admits one group or records why it waits.
func (p *pass) decide(it *item) {
	if len(it.Candidates) > 1 {
		p.wait(it, Reason{Kind: QueueAmbiguous, Namespace: it.Namespace, Candidates: it.Candidates})
		return
	}
	q, ok := p.m.queues[it.Queue]
	if !ok {
		p.wait(it, Reason{Kind: QueueNotFound, Queue: it.Queue})
		return
	}
	if !q.Admits(it.Namespace) {
		p.wait(it, Reason{Kind: QueueNotAllowed, Queue: it.Queue, Namespace: it.Namespace})
		return
	}
	if r, over := p.m.overQuota(q, it.least); over {
		p.wait(it, r)
		return
	}
	closed := p.closedTo(it)
	excluded := len(closed) > 0
	opts, cacheKey := closedOptions(closed), failureKey(it.signature, closed)
	if r, ok := p.failed[cacheKey]; ok {
		// The diagnosis is shared; it is rendered for this group only if read.
		r.subject = &it.keyed
		p.fail(it, r)
		return
	}
	stamp, reusable := p.placedStamp(closed)
	r, ok := p.m.placedFailure(cacheKey, stamp, reusable)
	if !ok {
		r, ok = p.freshFailure(cacheKey)
	}
	if ok {
		p.failed[cacheKey] = r
		r.subject = &it.keyed
		p.fail(it, r)
		return
	}
	plan, diag := placement.Place(p.snap, it.keyed, opts)
	if plan != nil {
		p.admitWithinQuota(it, q, plan, opts)
		return
	}
	r = Reason{Kind: Placement, Diagnosis: diag}
	if excluded && diag.Code == placement.Unschedulable {
		if free := placement.Try(p.snap, it.keyed, placement.Options{}); free != nil {
			free.Revert()
			r = Reason{Kind: Reserved, ReservedFor: closed[0].key, ForPreemption: closed[0].preemption}
		}
	}
	p.failed[cacheKey] = r
	p.m.notePlacedFailure(cacheKey, stamp, reusable, r)
	p.fail(it, r)
}

// admitWithinQuota admits it with plan if the plan's charge fits the queue's quota. A plan
// that places more than MinMember members and is over quota is replaced by one for the
// first MinMember members (the preferred ones), which may fit. Otherwise the plan is
// reverted, leaving the snapshot as it was, and the group waits with QuotaExceeded.
func (p *pass) admitWithinQuota(it *item, q Queue, plan *placement.Plan, opts placement.Options) {
	c := it.chargeOf(plan)
	r, over := p.m.overQuota(q, c)
	if over && len(plan.Assignments) > it.Group.MinMember {
		plan.Revert()
		g := it.keyed
		g.Members = g.Members[:g.MinMember]
		if plan = placement.Try(p.snap, g, opts); plan == nil {
			// Cannot happen on a snapshot the larger plan fitted; wait as over quota.
			p.wait(it, asExceeded(r))
			return
		}
		c = it.chargeOf(plan)
		r, over = p.m.overQuota(q, c)
	}
	if over {
		plan.Revert()
		p.wait(it, asExceeded(r))
		return
	}
	p.admit(it, plan, c)
}

// asExceeded reports a plan over quota as QuotaExceeded: the group's least charge fits
// the whole quota (Schedule checked), so some plan may fit once usage drops.
func asExceeded(r Reason) Reason {
	r.Kind = QuotaExceeded
	return r
}

// fail records a placement failure, and gives the group the reservation when it is the
// first starving group in order that could fit an empty cluster.
func (p *pass) fail(it *item, r Reason) {
	p.wait(it, r)
	if p.m.preempt[it.Key] != nil {
		return // its victims are still releasing the nodes reserved for it
	}
	starving := r.Kind == Placement && !r.Impossible() && p.now.Sub(it.QueuedAt) >= p.m.opts.StarvationThreshold
	switch {
	case starving && (p.m.reserve == nil || p.holds(it) || !p.behind):
		// No reservation yet, or this group is ahead of the one holding it.
		p.reserveFor(it)
	case p.holds(it):
		// Requeued since, or impossible now: the reservation would only idle nodes.
		p.m.reserve = nil
	}
}

// wait records that a group stays queued; a reservation holder that waits for anything
// but room (it does not fit, fits only on nodes reserved for another, or waits for the
// quota it reclaims) loses its reservations, since nodes would not help it.
func (p *pass) wait(it *item, r Reason) {
	if last := it.reason(); !p.versioned || last == nil || !sameKind(*last, r) {
		p.res.Waiting = append(p.res.Waiting, Waiting{Entry: &it.Entry, Reason: r})
	} else {
		p.res.Unchanged = append(p.res.Unchanged, Unchanged{Reason: r, Count: 1})
	}
	p.m.unsettle(it)
	it.last = r
	it.lastReason, it.pass = &it.last, p.id
	if r.Kind != Placement && r.Kind != Reserved && !r.Reclaimable {
		p.m.Unreserve(it.Key)
	}
}

func (p *pass) admit(it *item, plan *placement.Plan, c cluster.Resources) {
	p.m.Unreserve(it.Key)
	delete(p.m.entries, it.Key)
	p.m.forgetAdmitted(it)
	p.gone = append(p.gone, it)
	p.m.Charge(it.Key, it.Queue, c)
	delete(p.shares, it.Queue)
	p.res.Admitted = append(p.res.Admitted, Admission{Entry: it.Entry, Plan: plan, Charge: c})
}

// holds reports whether it holds the starving group's reservation.
func (p *pass) holds(it *item) bool { return p.m.reserve != nil && p.m.reserve.Key == it.Key }

// preemptedNodes is a reservation for preemption with its nodes as a set.
type preemptedNodes struct {
	*Reservation
	nodes map[string]bool
}

// closedNodes is a reservation whose nodes a group may not use: a preemption's nodes,
// closed whole, or what a starving group's reservation holds of each of its nodes
// (held), the rest being open.
type closedNodes struct {
	key        string
	preemption bool
	nodes      map[string]bool
	held       map[string]cluster.Resources
}

// closedOptions keeps a group off closed nodes: what the starving group's reservation
// (the one with shares) holds of each of its nodes, every node of a preemption's.
func closedOptions(closed []closedNodes) placement.Options {
	var opts placement.Options
	var whole []closedNodes
	for _, c := range closed {
		if c.held != nil {
			opts.Held = c.held
		} else {
			whole = append(whole, c)
		}
	}
	if len(whole) > 0 {
		opts.Exclude = func(node string) bool {
			return slices.ContainsFunc(whole, func(c closedNodes) bool { return c.nodes[node] })
		}
	}
	return opts
}

// closedTo returns the reservations whose nodes it may not use: the starving group's
// once the walk has passed its holder, and the nodes being freed by preemption that
// Reservation.closes keeps from it. The list is in the array of the previous call's: it
// holds until the next call.
func (p *pass) closedTo(it *item) []closedNodes {
	out := p.closed[:0]
	if p.m.reserve != nil && p.behind && !p.holds(it) && !p.backfills(it) {
		out = append(out, p.starvingClosed())
	}
	for _, r := range p.preempted {
		if r.closes(it.Key, it.Priority) && p.m.preempt[r.Key] == r.Reservation { // not dropped in this pass
			out = append(out, closedNodes{key: r.Key, preemption: true, nodes: r.nodes})
		}
	}
	p.closed = out
	return out
}

// starvingClosed is what the starving group's reservation closes: its share of each of
// its nodes.
func (p *pass) starvingClosed() closedNodes {
	return closedNodes{key: p.m.reserve.Key, held: p.m.reserve.Shares}
}

// backfills reports whether it may use the starving group's reserved nodes: it is
// expected to end before the starving group is expected to start (Slurm's backfill).
// Where either time is unknown it may not: the reservation stays conservative.
func (p *pass) backfills(it *item) bool {
	start := p.m.reserve.Start
	return it.Runtime > 0 && !start.IsZero() && !p.now.Add(it.Runtime).After(start)
}

// reserveFor gives it the reservation, or refreshes the one it holds, and excludes the
// nodes for every group after it.
func (p *pass) reserveFor(it *item) {
	nodes, shares := p.reservationOf(it)
	if nodes == nil {
		if p.holds(it) {
			p.m.reserve = nil
		}
		return
	}
	since := p.now
	if p.holds(it) {
		since = p.m.reserve.Since
	}
	p.m.reserve = &Reservation{Key: it.Key, Nodes: nodes, Since: since, Shares: shares}
	if p.m.est != nil {
		if start, ok := p.m.est.FreeAt(nodes); ok {
			if start.Before(p.now) {
				start = p.now // overdue: expected any moment
			}
			p.m.reserve.Start = start
		}
	}
	p.behind = true
}

// chargeOf sums the requests of the plan's placed members, raised to the group's MinCharge.
func (it *item) chargeOf(plan *placement.Plan) cluster.Resources {
	out := cluster.Resources{}
	for _, a := range plan.Assignments {
		out.Add(it.requests[a.Member])
	}
	raise(out, it.MinCharge)
	return out
}

func nodeSet(nodes []string) map[string]bool {
	out := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		out[n] = true
	}
	return out
}
