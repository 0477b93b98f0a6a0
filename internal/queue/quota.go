package queue

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// limits is what bounds one queue's holding of one resource.
//
// In a cohort each queue's quota is split in two: the part it lends (all of it, or its
// LendingLimit) and the rest, guaranteed to it alone. The lendable parts form the
// cohort's pool; a queue holding more than its guaranteed part draws the difference from
// the pool, and the queues' draws together may not exceed it. Without lending limits the
// pool is the sum of the quotas and the rule is the plain one: the cohort's queues hold
// no more than their summed quotas.
type limits struct {
	// quota is the queue's own quota; guaranteed, the part of it that it does not lend.
	quota, guaranteed int64
	// most is the most the queue may hold: its guaranteed part and the whole pool, up to
	// its quota plus its BorrowingLimit.
	most int64
	// cohortQuota is the pool, cohortUsed what the cohort's queues draw from it, drawn
	// what this queue draws; all zero without a cohort.
	cohortQuota, cohortUsed, drawn int64
	// paused says the queue may not borrow now: another queue of its cohort reclaims.
	paused bool
}

// now is the most the queue may hold at the moment: its quota while borrowing is
// paused, else l.most.
func (l limits) now() int64 {
	if l.paused {
		return l.quota
	}
	return l.most
}

// lendable returns how much of resource name queue q lends to its cohort: its quota,
// capped by its LendingLimit.
func lendable(q Queue, name corev1.ResourceName) int64 {
	v := q.Quota[name]
	if limit, ok := q.LendingLimit[name]; ok {
		v = min(v, max(limit, 0))
	}
	return v
}

// limitsOf returns the bounds on queue q's holding of resource name, which its quota
// lists.
func (m *Manager) limitsOf(q Queue, name corev1.ResourceName) limits {
	l := limits{quota: q.Quota[name], guaranteed: q.Quota[name], most: q.Quota[name]}
	if q.Cohort == "" {
		return l
	}
	for _, other := range m.queues {
		if _, ok := other.Quota[name]; !ok || other.Cohort != q.Cohort {
			continue
		}
		lend := lendable(other, name)
		guaranteed := other.Quota[name] - lend
		draw := max(m.used[other.Name][name]-guaranteed, 0)
		l.cohortQuota += lend
		l.cohortUsed += draw
		if other.Name == q.Name {
			l.guaranteed, l.drawn = guaranteed, draw
		}
	}
	l.most = l.guaranteed + l.cohortQuota
	if limit, ok := q.BorrowingLimit[name]; ok {
		l.most = min(l.most, l.quota+max(limit, 0))
	}
	l.paused = m.reclaiming(q)
	return l
}

// overCohort reports whether the queue holding used+need would draw more than the
// cohort's pool has left.
func (l limits) overCohort(used, need int64) bool {
	return l.cohortUsed-l.drawn+max(used+need-l.guaranteed, 0) > l.cohortQuota
}

// overQuota checks a charge against queue q, given what the admitted groups hold. A
// resource whose charge alone exceeds what the queue may ever hold is reported before
// one that only exceeds it with the usage, so an impossible group is always told so;
// among equals, the first resource by name is reported. Resources the quota does not
// list are unlimited.
//
// In a cohort, a charge fits when the queue stays within its quota plus what it may
// borrow and the cohort's queues draw no more than its pool (see limits): without
// lending limits, they hold no more than their summed quotas. A charge that fits the
// queue's own quota but not the pool, because other queues borrow, is Reclaimable: the
// queues that hold more than their quota are then the ones drawing what it lacks.
func (m *Manager) overQuota(q Queue, need cluster.Resources) (Reason, bool) {
	if len(q.Quota) == 0 {
		return Reason{}, false
	}
	var buf [4]corev1.ResourceName
	names := buf[:0]
	for name := range q.Quota {
		if need[name] > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	used := m.usedBy(q.Name)
	reason := func(kind ReasonKind, name corev1.ResourceName, l limits) Reason {
		r := Reason{Kind: kind, Queue: q.Name, Resource: name, Need: need[name], Used: used[name], Quota: l.quota}
		if q.Cohort != "" {
			r.Cohort, r.CohortUsed, r.CohortQuota, r.Limit = q.Cohort, l.cohortUsed, l.cohortQuota, l.most
		}
		return r
	}
	var boundsBuf [4]limits
	bounds := boundsBuf[:0]
	for _, name := range names {
		l := m.limitsOf(q, name)
		if need[name] > l.most {
			return reason(QuotaNeverEnough, name, l), true
		}
		bounds = append(bounds, l)
	}
	for i, name := range names {
		l := bounds[i]
		if used[name]+need[name] > l.now() {
			r := reason(QuotaExceeded, name, l)
			r.BorrowingPaused = l.paused && used[name]+need[name] > l.quota
			return r, true
		}
		if q.Cohort != "" && l.overCohort(used[name], need[name]) {
			r := reason(QuotaExceeded, name, l)
			r.Reclaimable = used[name]+need[name] <= l.quota && !m.opts.NoReclaim
			return r, true
		}
	}
	return Reason{}, false
}

// Borrowed returns how much more of resource res queue name holds than its quota,
// which only a queue of a cohort may: what it holds beyond is lent by the others. It is
// zero for a queue that does not borrow res.
func (m *Manager) Borrowed(name string, res corev1.ResourceName) int64 {
	q, ok := m.queues[name]
	if !ok || q.Cohort == "" {
		return 0
	}
	quota, ok := q.Quota[res]
	if !ok {
		return 0
	}
	return max(m.used[name][res]-quota, 0)
}

// Cohort returns the cohort of queue name, or "" if it has none or does not exist.
func (m *Manager) Cohort(name string) string { return m.queues[name].Cohort }

// FitsQuotaWithout reports whether queued group key's least charge would fit its
// queue's quota and cohort if the groups without released what they hold. The Manager is
// as it was after the call.
func (m *Manager) FitsQuotaWithout(key string, without []string) bool {
	it := m.entries[key]
	if it == nil {
		return false
	}
	q, ok := m.queues[it.Queue]
	if !ok {
		return false
	}
	for _, k := range without {
		if c, ok := m.charges[k]; ok {
			m.used[c.queue].Sub(c.res)
		}
	}
	_, over := m.overQuota(q, it.least)
	for _, k := range without {
		if c, ok := m.charges[k]; ok {
			m.used[c.queue].Add(c.res)
		}
	}
	return !over
}

// QuotaLeft returns, for queue name with a quota and no cohort, what is left of the
// quota now for each resource it lists (zero included, never below) and the charge each
// admitted group holds against it, by key; ok is false for a queue without a quota, or
// in a cohort, where what is left also depends on the other queues' borrowing.
func (m *Manager) QuotaLeft(name string) (left cluster.Resources, holders map[string]cluster.Resources, ok bool) {
	if !m.OwnQuota(name) {
		return nil, nil, false
	}
	q := m.queues[name]
	used := m.usedBy(name)
	left = cluster.Resources{}
	for res, v := range q.Quota {
		left[res] = max(v-used[res], 0)
	}
	holders = map[string]cluster.Resources{}
	for key, c := range m.charges {
		if c.queue == name {
			holders[key] = c.res
		}
	}
	return left, holders, true
}

// OwnQuota reports whether queue name has a quota and no cohort: what is left of it
// depends on its own admitted groups alone (see QuotaLeft).
func (m *Manager) OwnQuota(name string) bool {
	q, ok := m.queues[name]
	return ok && len(q.Quota) > 0 && q.Cohort == ""
}

// LeastCharge returns the least any plan of queued group key charges its queue, or nil
// when it is not queued.
func (m *Manager) LeastCharge(key string) cluster.Resources {
	if it := m.entries[key]; it != nil {
		return it.least
	}
	return nil
}
