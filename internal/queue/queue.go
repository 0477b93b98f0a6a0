// Package queue is muster's admission queue: it holds the groups waiting to run, orders
// them, and admits them in one decision with placement, within their queues' quotas.
//
// Schedule walks every queued group once per call, in order, and for each one either
// admits it (a placement.Plan computed on the caller's snapshot, whose charge fits the
// queue's quota) or says why it waits. Quota and fit are one decision: a plan that would
// exceed the quota is reverted and the group waits. A group that does not fit does not
// block smaller groups behind it (backfill), except where a starving group holds a
// reservation: a group that has waited past Options.StarvationThreshold and still does
// not fit reserves the nodes it would use once their pods finish, and the groups behind it
// may only use the other nodes until it is admitted.
//
// Order, across all queues: queue priority (higher first), group priority (higher first),
// then weighted fairness between queues: the queue holding the smallest dominant share
// of the cluster per unit of weight goes next (DRF). Within a queue: groups that never
// failed before requeued ones, (re)queue time, then key.
//
// A group may use only a queue that admits its namespace (Queue.Namespaces); one that
// names another waits with QueueNotAllowed, and one that names none while several queues
// admit its namespace waits with QueueAmbiguous rather than be charged to a guess.
//
// The package is pure: no client, no clock (time is passed in), no goroutines.
package queue

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// Queue is a named quota that groups are admitted against.
type Queue struct {
	// Name identifies the queue; entries name it.
	Name string
	// Quota caps the summed charge of the queue's admitted groups per resource. A nil
	// Quota is unlimited, and so is every resource it does not list.
	Quota cluster.Resources
	// Priority orders queues: every group of a higher-priority queue comes before every
	// group of a lower one.
	Priority int32
	// Weight is the queue's share relative to the other queues of its priority when
	// they take turns by fairness (see WeightedShare); below 1 counts as 1.
	Weight int32
	// Cohort names the set of queues that lend each other the quota they do not use;
	// empty for none. A queue of a cohort may hold more than its Quota of a resource
	// while the cohort's queues together hold no more than their summed quotas of it;
	// a group within its own queue's quota takes back what is lent (see
	// Reason.Reclaimable). Only the queues whose Quota lists a resource lend or borrow
	// it.
	Cohort string
	// BorrowingLimit caps, per resource, how much more than its Quota the queue may
	// hold by borrowing. Resources it does not list are capped by the cohort alone.
	BorrowingLimit cluster.Resources
	// LendingLimit caps, per resource, how much of its Quota the queue lends to its
	// cohort; the rest is its alone, used or not. Resources it does not list are lent
	// whole.
	LendingLimit cluster.Resources
	// Namespaces is the set of namespaces whose groups may use the queue (the Queue's
	// namespaceSelector, evaluated by the caller). Nil admits every namespace (a queue
	// with no object behind it); an empty set admits none.
	Namespaces map[string]bool
}

// Admits reports whether groups of namespace ns may use the queue.
func (q Queue) Admits(ns string) bool { return q.Namespaces == nil || q.Namespaces[ns] }

// Entry is a group waiting for admission.
type Entry struct {
	// Key identifies the group.
	Key string
	// Queue names the queue the group is charged to.
	Queue string
	// Priority orders groups, higher first.
	Priority int32
	// QueuedAt is when the group was (re)queued; older first, and the start of its wait
	// for the starvation threshold.
	QueuedAt time.Time
	// Handicap moves the group back in its queue's order as if it had been queued
	// Handicap later (see engine.SizeOrder). The starvation threshold still counts from
	// QueuedAt.
	Handicap time.Duration
	// Requeued marks a group that failed before: it comes after the groups of its
	// priority that never failed.
	Requeued bool
	// Group is the placement request: members to place, MinMember and topology.
	Group placement.Group
	// MinCharge, when set, is a floor for the quota charge, per resource (the source
	// API's minResources).
	MinCharge cluster.Resources
	// Runtime is how long the group is expected to run once admitted, or zero when
	// unknown. A group with a known Runtime may backfill the nodes reserved for a
	// starving group when it is expected to end before that group's expected start.
	Runtime time.Duration
	// Namespace is the group's namespace: the queue must admit it (Queue.Namespaces).
	Namespace string
	// Candidates, when it holds more than one queue, says the group named no queue and
	// each of these admits its namespace: the group waits with QueueAmbiguous.
	Candidates []string
	// Devices are what members' DRA claims charge to quota beyond their pods' requests,
	// per DeviceClass, by member name (see kubefit.DeviceCounts). Placement does not
	// read them: devices are placed by their claims.
	Devices map[string]cluster.Resources
}

// Estimator tells when nodes are expected to be free of the pods on them now: the
// latest expected end of those pods' groups, and false when some group's end is
// unknown. The engine knows the running groups' expected ends; the queue does not.
type Estimator interface {
	FreeAt(nodes []string) (time.Time, bool)
	// PlannedNodes returns the nodes on which queued group key is expected to start
	// soonest, from the capacity the running groups are expected to release, or nil
	// when that is not known.
	PlannedNodes(key string) []string
}

// Options configure a Manager.
type Options struct {
	// StarvationThreshold is how long a group may wait without fitting before it gets a
	// reservation. Zero reserves for any group that does not fit at once.
	StarvationThreshold time.Duration
	// NoReclaim says lent quota is not taken back (the caller evicts no one for it): a
	// group within its queue's quota whose cohort lent it out waits as any group over
	// quota does, not Reclaimable.
	NoReclaim bool
}

// QueueStatus is a queue with its current usage.
type QueueStatus struct {
	Queue
	// Used is the summed charge of the groups that hold quota in the queue, without
	// zero amounts.
	Used cluster.Resources
	// Admitted counts the groups that hold quota in the queue.
	Admitted int
	// Waiting counts the queued groups that name the queue.
	Waiting int
}

// Manager holds the queues, the waiting groups, the quota held by admitted groups and the
// reservations. It is not safe for concurrent use.
type Manager struct {
	opts    Options
	queues  map[string]Queue
	entries map[string]*item
	charges map[string]charge
	used    map[string]cluster.Resources // by queue
	// reserve is the starving group's reservation, or nil.
	reserve *Reservation
	// preempt holds the reservations of the nodes being freed by preemption, by the
	// group they are freed for (see ReserveForPreemption).
	preempt map[string]*Reservation
	// est tells when reserved nodes are expected to be free, or is nil (see SetEstimator).
	est Estimator
	// order keeps the entries in walk order; classes and unsettled group them for
	// ScheduleChanges (see depth.go).
	order     order
	classes   classSet
	unsettled itemSet
	// passes counts Schedule calls, to tell the groups a pass decided.
	passes uint64
	// placed holds the placement failures recorded on snapshot version placedVersion,
	// by placement cache key (see ScheduleChanges).
	placed        map[failKey]placedFailure
	placedVersion uint64
	// waiting and unchanged are the arrays of the last pass's Result.Waiting and
	// Result.Unchanged, and reports trySkip's, which the next pass reuses.
	waiting   []Waiting
	unchanged []Unchanged
	reports   []report
	// fresh is the map of a pass's fresh failures (pass.fresh), emptied and reused.
	fresh map[failKey]Reason
	// verdicts and verdictBuf are the map and array of trySkip's verdicts (pass.verdicts),
	// emptied and reused when its stamp changes: no verdict outlives it (a class's
	// canon is a copy).
	verdicts   map[verdictKey]*verdictOf
	verdictBuf []verdictOf
	// lastReserved is the last reservation's nodes computed (see reservationOf).
	lastReserved reservedNodes
	// stamped is the reservation whose stamp is stampText (see placedStamp): a pass
	// looks a failure up for every class the reservation closes nodes to.
	stamped   *Reservation
	stampText string
}

// SetEstimator gives the manager the expected ends of running groups: a starving
// group's reservation then has an expected start (Reservation.Start), and groups that
// are expected to end before it may use its nodes meanwhile (backfill).
func (m *Manager) SetEstimator(est Estimator) { m.est = est }

// item is a queued entry with what Schedule needs of it, computed once at Push.
type item struct {
	Entry
	// ordered is QueuedAt plus Handicap, where the item's queue orders it (byEntry).
	ordered   time.Time
	signature string
	// keyed is Entry.Group with each member's placement.Member.Key set: every pass
	// places the group again, and rendering its members' shape keys each time cost more
	// than the placement of a gang of one shape.
	keyed placement.Group
	// requests is each member's request, by member name, without the pod count.
	requests map[string]cluster.Resources
	// least is a lower bound of the charge of any plan for the group.
	least cluster.Resources
	// cls is the item's class; settled says it is filed in cls.settled[variant] with
	// the reason of its class, cls.canon[variant], else it is in Manager.unsettled with
	// lastReason, the reason it was last given (nil before its first pass): last.
	cls     *class
	variant int
	settled bool
	// unsettledAt is the item's place in Manager.unsettled, from 1, or 0.
	unsettledAt int
	lastReason  *Reason
	last        Reason
	// pass is the last pass that decided the item.
	pass uint64
}

// charge is quota held by one group.
type charge struct {
	queue string
	res   cluster.Resources
}

// New returns an empty Manager.
func New(opts Options) *Manager {
	return &Manager{
		opts:    opts,
		queues:  map[string]Queue{},
		entries: map[string]*item{},
		charges: map[string]charge{},
		used:    map[string]cluster.Resources{},
		preempt: map[string]*Reservation{},

		order:   newOrder(),
		classes: classSet{byKey: map[string]*class{}},
		placed:  map[failKey]placedFailure{},
	}
}

// SetQueue adds a queue or replaces its quota, priority and weight. Charges already held stay.
func (m *Manager) SetQueue(q Queue) {
	q.Quota, q.BorrowingLimit, q.LendingLimit = q.Quota.Clone(), q.BorrowingLimit.Clone(), q.LendingLimit.Clone()
	if q.Namespaces != nil {
		q.Namespaces = maps.Clone(q.Namespaces)
	}
	m.queues[q.Name] = q
}

// RemoveQueue forgets a queue. Its groups stay queued and wait with QueueNotFound; the
// charges held in it stay recorded and count again if it comes back.
func (m *Manager) RemoveQueue(name string) { delete(m.queues, name) }

// Queues returns every queue with its usage, sorted by name.
func (m *Manager) Queues() []QueueStatus {
	out := make([]QueueStatus, 0, len(m.queues))
	for _, q := range m.queues {
		st := QueueStatus{Queue: q, Used: cluster.Resources{}}
		for name, v := range m.used[q.Name] {
			if v != 0 {
				st.Used[name] = v
			}
		}
		for _, c := range m.charges {
			if c.queue == q.Name {
				st.Admitted++
			}
		}
		for _, it := range m.entries {
			if it.Queue == q.Name {
				st.Waiting++
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b QueueStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Borrowed returns what s holds beyond its quota, per resource the quota lists: what
// its cohort lends it. It is empty for a queue outside a cohort.
func (s QueueStatus) Borrowed() cluster.Resources {
	if s.Cohort == "" {
		return cluster.Resources{}
	}
	return Borrowed(s.Used, s.Quota)
}

// Borrowed returns what used holds beyond quota, per resource quota lists, without zero
// amounts.
func Borrowed(used, quota cluster.Resources) cluster.Resources {
	out := cluster.Resources{}
	for name, q := range quota {
		if v := used[name]; v > q {
			out[name] = v - q
		}
	}
	return out
}

// Push queues a group, replacing a queued group of the same key, and reports whether the
// queue changed: false when it held the same entry already.
func (m *Manager) Push(e Entry) bool {
	if old := m.entries[e.Key]; old != nil && sameEntry(&old.Entry, &e) {
		return false // it keeps its place, class and the reason it was last given
	}
	it := &item{Entry: e, ordered: e.QueuedAt.Add(e.Handicap), signature: placement.Signature(e.Group), requests: map[string]cluster.Resources{}}
	it.keyed = e.Group
	it.keyed.Members = make([]placement.Member, len(e.Group.Members))
	for i, mem := range e.Group.Members {
		if mem.Key == "" {
			mem.Key = placement.ShapeKey(mem)
		}
		it.keyed.Members[i] = mem
		var r cluster.Resources
		if mem.Requests != nil {
			r = mem.Requests.Clone()
		} else {
			r = cluster.PodRequests(mem.Pod)
		}
		delete(r, corev1.ResourcePods)
		r.Add(e.Devices[mem.Name])
		it.requests[mem.Name] = r
	}
	// A pass places the group again and again: its shapes are made once.
	it.keyed = placement.Prepare(it.keyed)
	it.least = leastCharge(e.Group, it.requests, e.MinCharge)
	if old := m.entries[e.Key]; old != nil {
		m.untrack(old)
	}
	m.entries[e.Key] = it
	m.track(it)
	return true
}

// sameEntry reports whether a and b ask the same of the queue: every field equal, the
// members' pods the same objects. An engine offers a group again whenever it advances
// it, most often unchanged. TestSameEntryNamesEveryField fails when Entry, Group or
// Member gains a field this does not compare.
func sameEntry(a, b *Entry) bool {
	return a.Key == b.Key && a.Queue == b.Queue && a.Priority == b.Priority && a.QueuedAt.Equal(b.QueuedAt) &&
		a.Handicap == b.Handicap && a.Requeued == b.Requeued && a.Runtime == b.Runtime && a.Namespace == b.Namespace &&
		slices.Equal(a.Candidates, b.Candidates) && a.MinCharge.Equal(b.MinCharge) &&
		maps.EqualFunc(a.Devices, b.Devices, cluster.Resources.Equal) && sameGroup(&a.Group, &b.Group)
}

// sameGroup reports whether a and b are the same placement request (see sameEntry).
func sameGroup(a, b *placement.Group) bool {
	return a.Name == b.Name && a.MinMember == b.MinMember && a.Topology == b.Topology &&
		maps.Equal(a.TaskMinimums, b.TaskMinimums) &&
		slices.EqualFunc(a.Members, b.Members, func(x, y placement.Member) bool {
			return x.Name == y.Name && x.Pod == y.Pod && x.Key == y.Key && x.Task == y.Task &&
				(x.Requests == nil) == (y.Requests == nil) && x.Requests.Equal(y.Requests)
		})
}

// reason returns the reason the item was last given: its class's for a settled item,
// else its own; nil before its first pass.
func (it *item) reason() *Reason {
	if it.settled {
		return it.cls.canon[it.variant]
	}
	return it.lastReason
}

// Reason returns why queued group key waits after the last pass, rendered for it, and
// false when it is not queued or no pass decided it yet. ScheduleChanges lists a group
// only when its kind of reason changes; this is the reason it has now.
func (m *Manager) Reason(key string) (Reason, bool) {
	it := m.entries[key]
	if it == nil || it.reason() == nil {
		return Reason{}, false
	}
	r := *it.reason()
	if r.Diagnosis != nil && r.subject == nil && it.settled {
		r.subject = &it.keyed // the class's diagnosis was made for another of its groups
	}
	return r, true
}

// Remove takes a group out of the queue, and drops its reservations.
func (m *Manager) Remove(key string) {
	if it := m.entries[key]; it != nil {
		m.untrack(it)
	}
	delete(m.entries, key)
	m.Unreserve(key)
}

// Charge records that group key holds r of queue's quota (it is admitted or running),
// replacing what it held before. Schedule records the charge of the groups it admits.
func (m *Manager) Charge(key, queue string, r cluster.Resources) {
	if c, ok := m.charges[key]; ok && c.queue == queue && maps.Equal(c.res, r) {
		return // a group advanced with no change to what it holds: most are
	}
	m.Release(key)
	r = r.Clone()
	m.charges[key] = charge{queue: queue, res: r}
	used := m.used[queue]
	if used == nil {
		used = cluster.Resources{}
		m.used[queue] = used
	}
	used.Add(r)
}

// Release records that group key no longer holds quota.
func (m *Manager) Release(key string) {
	c, ok := m.charges[key]
	if !ok {
		return
	}
	delete(m.charges, key)
	m.used[c.queue].Sub(c.res)
}

func (m *Manager) usedBy(queue string) cluster.Resources {
	if u := m.used[queue]; u != nil {
		return u
	}
	return cluster.Resources{}
}

// leastCharge bounds from below the charge of any plan placing at least MinMember members:
// per resource, the sum of the MinMember smallest member requests, raised to floor.
func leastCharge(g placement.Group, requests map[string]cluster.Resources, floor cluster.Resources) cluster.Resources {
	out := cluster.Resources{}
	names := map[corev1.ResourceName]bool{}
	for _, r := range requests {
		for name := range r {
			names[name] = true
		}
	}
	k := min(max(g.MinMember, 0), len(g.Members))
	amounts := make([]int64, len(g.Members))
	for name := range names {
		for i, mem := range g.Members {
			amounts[i] = requests[mem.Name][name]
		}
		slices.Sort(amounts)
		var sum int64
		for _, v := range amounts[:k] {
			sum += v
		}
		if sum != 0 {
			out[name] = sum
		}
	}
	raise(out, floor)
	return out
}

// raise lifts each amount of r to at least floor's.
func raise(r, floor cluster.Resources) {
	for name, v := range floor {
		if r[name] < v {
			r[name] = v
		}
	}
}

// Placement returns queued group key as a pass places it: its members keyed by shape
// and prepared (placement.Prepare), the same slice for as long as the entry stays; false
// if key is not queued. The group is shared: callers must not modify it.
func (m *Manager) Placement(key string) (placement.Group, bool) {
	it := m.entries[key]
	if it == nil {
		return placement.Group{}, false
	}
	return it.keyed, true
}
