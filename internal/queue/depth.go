package queue

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// A deep queue is mostly groups that cannot fit now, and most of them wait for the same
// reason pass after pass. ScheduleChanges decides them in bulk: the groups that read the
// same inputs of a decision (queue, namespace, least charge, placement.Signature: a
// class) get the same verdict once the walk has passed the last admission, so the pass
// walks groups in order only until it can show, one placement per class, that none of
// the groups left can be admitted; it then reports only those whose reason differs from
// the one they were last given. The groups of a class are kept by variant (whether the
// starving group's reservation excludes its nodes for them, see closedTo) and, within a
// variant, by expected run time, so that the groups whose variant changed as time passed
// (a backfill that would now end after the reservation's start) are found without
// looking at the others.

// class is the groups that get the same verdict at the same point of a pass.
type class struct {
	key string
	// at is the class's place in classSet.list.
	at    int
	count int
	// settled holds, by variant, the groups whose last reason is canon of their variant
	// and that were not decided one by one since, sorted by runtimeKey.
	settled [2][]*item
	// canon is, by variant, the reason the settled groups were last given.
	canon [2]*Reason
}

// classSet holds the classes by key, and in a list that a pass walks without a map's
// iteration: trySkip goes over every class twice.
type classSet struct {
	byKey map[string]*class
	list  []*class
}

// get returns the class of key, made if there is none.
func (s *classSet) get(key string) *class {
	c := s.byKey[key]
	if c == nil {
		c = &class{key: key, at: len(s.list)}
		s.byKey[key] = c
		s.list = append(s.list, c)
	}
	return c
}

// remove forgets c.
func (s *classSet) remove(c *class) {
	delete(s.byKey, c.key)
	last := s.list[len(s.list)-1]
	s.list[c.at], last.at = last, c.at
	s.list[len(s.list)-1] = nil
	s.list = s.list[:len(s.list)-1]
}

// itemSet is the items decided one by one, in a list (see item.unsettledAt).
type itemSet []*item

// add adds it unless it is in the set.
func (s *itemSet) add(it *item) {
	if it.unsettledAt == 0 {
		*s = append(*s, it)
		it.unsettledAt = len(*s)
	}
}

// remove takes it out of the set if it is in it.
func (s *itemSet) remove(it *item) {
	i := it.unsettledAt
	if i == 0 {
		return
	}
	last := (*s)[len(*s)-1]
	(*s)[i-1], last.unsettledAt = last, i
	(*s)[len(*s)-1] = nil
	*s = (*s)[:len(*s)-1]
	it.unsettledAt = 0
}

// Variants of a class's groups.
const (
	open   = 0 // no reservation's nodes are closed to the group
	closed = 1 // the starving group's reserved nodes are closed to it
)

// Unchanged counts the groups that wait for the same reason as on the pass before, which
// ScheduleChanges does not list in Result.Waiting.
type Unchanged struct {
	Reason Reason
	Count  int
}

func classKey(it *item) string {
	var b strings.Builder
	b.WriteString(it.Queue)
	b.WriteByte(0)
	b.WriteString(it.Namespace)
	b.WriteByte(0)
	if len(it.Candidates) > 1 {
		b.WriteString(strings.Join(it.Candidates, ","))
	}
	b.WriteByte(0)
	for _, name := range it.least.Names() {
		b.WriteString(string(name))
		b.WriteByte('=')
		b.WriteString(cluster.Format(name, it.least[name]))
		b.WriteByte(',')
	}
	b.WriteByte(0)
	b.WriteString(it.signature)
	return b.String()
}

// runtimeKey orders groups by expected run time, unknown last.
func runtimeKey(it *item) time.Duration {
	if it.Runtime <= 0 {
		return math.MaxInt64
	}
	return it.Runtime
}

func bySettled(a, b *item) int {
	if c := cmp.Compare(runtimeKey(a), runtimeKey(b)); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// track files a pushed item in its class, to be decided on the next pass.
func (m *Manager) track(it *item) {
	c := m.classes.get(classKey(it))
	c.count++
	it.cls = c
	m.unsettled.add(it)
	m.order.add(it)
}

// untrack forgets an item that left the queue.
func (m *Manager) untrack(it *item) {
	m.forgetAdmitted(it)
	m.order.removeFromLane(it)
}

// forgetAdmitted forgets an item that left the queue, except in the walk's lanes.
func (m *Manager) forgetAdmitted(it *item) {
	m.unsettle(it)
	m.unsettled.remove(it)
	m.order.removeFromQueued(it)
	if it.cls.count--; it.cls.count == 0 {
		m.classes.remove(it.cls)
	}
}

// unsettle moves a settled item to the ones decided one by one.
func (m *Manager) unsettle(it *item) {
	if it.settled {
		c := it.cls
		c.settled[it.variant] = removeSorted(c.settled[it.variant], it, bySettled)
		it.settled = false
	}
	m.unsettled.add(it)
}

// ScheduleChanges decides as Schedule does, with the same admissions, reservations and
// reasons, but Result.Waiting lists only the waiting groups whose reason may differ from
// the one they were given on the previous call (in the order Schedule would list them),
// and Result.Unchanged counts the others; Position is not set. The queue's reservations
// for preemption must be decided by Schedule: while there are any, every group is
// listed.
//
// version identifies what of the snapshot placement reads: the caller must change it
// whenever a node, a pod counted on a node, or an object the filters read changes. A
// group that failed placement on the same version, with the same nodes closed to it,
// before any admission of the pass, fails again the same way without being placed.
func (m *Manager) ScheduleChanges(s *cluster.Snapshot, version uint64, now time.Time) Result {
	return m.schedule(s, now, true, version)
}

// trySkip ends the walk when no group it has not reached can be admitted: every class
// with such groups fails, in the variants they have now, on the snapshot as it is. Their
// verdicts are then what the walk would give them; the groups whose reason changed are
// listed and the others counted. It reports false, changing nothing, when it cannot show
// that, or when deciding the rest could move a reservation.
func (p *pass) trySkip() bool {
	m := p.m
	if len(m.preempt) > 0 || len(p.preempted) > 0 {
		return false
	}
	applies := m.reserve != nil
	if applies && !p.behind || !applies && p.starvingLeft() {
		return false
	}
	bound := time.Duration(-1) // backfills for runtimeKey at or below bound
	if applies && !m.reserve.Start.IsZero() {
		bound = m.reserve.Start.Sub(p.now)
	}
	variantOf := func(it *item) int {
		if applies && runtimeKey(it) > bound {
			return closed
		}
		return open
	}
	// Verdicts hold until a group is admitted or the reservation changes.
	if stamp := p.skipStamp(); p.verdicts == nil || stamp != p.stamp {
		if m.verdicts == nil {
			m.verdicts = map[verdictKey]*verdictOf{}
		}
		clear(m.verdicts)
		m.verdictBuf = m.verdictBuf[:0]
		p.verdicts, p.stamp = m.verdicts, stamp
	}
	sk := skip{p: p, verdicts: p.verdicts, reports: m.reports[:0]}
	for _, c := range m.classes.list {
		for v := range 2 {
			for _, w := range splitVariants(c.settled[v], applies, bound) {
				if len(w.items) > 0 && !sk.need(c, w.items[0], w.variant) {
					return false
				}
			}
		}
	}
	for _, it := range m.unsettled {
		if it.pass != p.id && !sk.need(it.cls, it, variantOf(it)) {
			return false
		}
	}
	sk.commit(applies, bound, variantOf)
	return true
}

// starvingLeft reports whether a group the walk has not reached has waited past the
// starvation threshold: deciding it could give it the reservation. It looks at the
// oldest groups only, and says true when it cannot tell.
func (p *pass) starvingLeft() bool {
	for i, it := range p.m.order.byQueued {
		if p.now.Sub(it.QueuedAt) < p.m.opts.StarvationThreshold {
			return false
		}
		if it.pass != p.id || i >= 64 {
			return true
		}
	}
	return false
}

// variantRun is a run of a settled list whose groups have variant now.
type variantRun struct {
	items   []*item
	variant int
}

// splitVariants splits settled groups of a class (sorted by runtimeKey) by the variant
// they have now: open up to bound, closed after; without a reservation, the closed run is
// empty. The runs come in an array: a slice of them made on every call showed in a
// replay's profile.
func splitVariants(items []*item, applies bool, bound time.Duration) [2]variantRun {
	i := len(items)
	if applies {
		i, _ = slices.BinarySearchFunc(items, bound, func(it *item, b time.Duration) int {
			if runtimeKey(it) <= b {
				return -1
			}
			return 1
		})
	}
	return [2]variantRun{{items[:i], open}, {items[i:], closed}}
}

type verdictKey struct {
	c       *class
	variant int
}

// verdictOf is the reason a class's groups of one variant get, computed for rep, or
// fits when rep would be admitted.
type verdictOf struct {
	Reason
	rep  *item
	fits bool
}

// newVerdict returns v in the verdicts' array, which keeps its place until trySkip
// empties it: when the array is full, a larger one takes the next verdicts, and the
// full one stays with those that point into it.
func (m *Manager) newVerdict(v verdictOf) *verdictOf {
	if len(m.verdictBuf) == cap(m.verdictBuf) {
		m.verdictBuf = make([]verdictOf, 0, max(16, 2*cap(m.verdictBuf)))
	}
	m.verdictBuf = append(m.verdictBuf, v)
	return &m.verdictBuf[len(m.verdictBuf)-1]
}

// skipStamp is what trySkip's verdicts depend on besides the snapshot: they hold for the
// rest of the pass while no group is admitted and the reservation stays.
type skipStamp struct {
	admitted int
	reserve  *Reservation
}

// skip is one trySkip: the verdict of each class and variant, then what it reports.
type skip struct {
	p        *pass
	verdicts map[verdictKey]*verdictOf
	reports  []report
}

// report is a group whose reason changed, with what list orders it by, computed once
// rather than on each comparison of the sort.
type report struct {
	it *item
	// reason is the verdict of the group's class and variant, shared by its groups.
	reason *Reason
	qprio  int32
	share  float64
}

// need computes the verdict of c's groups of variant v, with rep as their
// representative, and reports false if they could be admitted.
func (sk *skip) need(c *class, rep *item, v int) bool {
	k := verdictKey{c, v}
	vd, ok := sk.verdicts[k]
	if !ok {
		r, fits := sk.p.verdict(rep, v == closed)
		vd = sk.p.m.newVerdict(verdictOf{r, rep, fits})
		sk.verdicts[k] = vd
	}
	if vd.fits {
		sk.p.blocker = c
	}
	return !vd.fits
}

// verdict decides it as decide would at this point of the pass, without admitting it or
// recording anything: its reason, or true if it would be admitted.
func (p *pass) verdict(it *item, excluded bool) (Reason, bool) {
	if len(it.Candidates) > 1 {
		return Reason{Kind: QueueAmbiguous, Namespace: it.Namespace, Candidates: it.Candidates}, false
	}
	q, ok := p.m.queues[it.Queue]
	switch {
	case !ok:
		return Reason{Kind: QueueNotFound, Queue: it.Queue}, false
	case !q.Admits(it.Namespace):
		return Reason{Kind: QueueNotAllowed, Queue: it.Queue, Namespace: it.Namespace}, false
	}
	if r, over := p.m.overQuota(q, it.least); over {
		return r, false
	}
	var closedTo []closedNodes
	cacheKey := failKey{signature: it.signature}
	if excluded {
		closedTo = []closedNodes{p.starvingClosed()}
		cacheKey.closed = p.m.reserve.Key
	}
	opts := closedOptions(closedTo)
	if r, ok := p.failed[cacheKey]; ok {
		return r, false
	}
	stamp, reusable := p.placedStamp(closedTo)
	if r, ok := p.m.placedFailure(cacheKey, stamp, reusable); ok {
		return r, false
	}
	plan, diag := placement.Place(p.snap, it.keyed, opts)
	if plan != nil {
		plan.Revert()
		return Reason{}, true
	}
	r := Reason{Kind: Placement, Diagnosis: diag}
	if excluded && diag.Code == placement.Unschedulable {
		if free := placement.Try(p.snap, it.keyed, placement.Options{}); free != nil {
			free.Revert()
			r = Reason{Kind: Reserved, ReservedFor: p.m.reserve.Key}
		}
	}
	p.m.notePlacedFailure(cacheKey, stamp, reusable, r)
	p.noteFresh(cacheKey, r)
	return r, false
}

// skipStamp is what holds while the snapshot and the reservation stay as they are in a
// pass: no group admitted since, the same reservation.
func (p *pass) skipStamp() skipStamp { return skipStamp{len(p.res.Admitted), p.m.reserve} }

// noteFresh records a failure verdict placed, for freshFailure. A trySkip that finds
// some class could be admitted leaves the walk to decide the groups before that class
// one by one, and verdict has placed most of their classes already, on the snapshot
// as it still is.
func (p *pass) noteFresh(key failKey, r Reason) {
	if st := p.skipStamp(); p.fresh == nil || st != p.freshStamp {
		if p.m.fresh == nil {
			p.m.fresh = map[failKey]Reason{}
		}
		clear(p.m.fresh)
		p.fresh, p.freshStamp = p.m.fresh, st
	}
	p.fresh[key] = r
}

// freshFailure returns the failure verdict recorded for placement cache key key, if no
// group was admitted and the reservation stayed since.
func (p *pass) freshFailure(key failKey) (Reason, bool) {
	if p.fresh == nil || p.skipStamp() != p.freshStamp {
		return Reason{}, false
	}
	r, ok := p.fresh[key]
	return r, ok
}

// commit reports the groups whose kind of reason changed, counts the others, and files
// every group the walk did not reach as settled with the reason it has now: the canon of
// its class and variant.
func (sk *skip) commit(applies bool, bound time.Duration, variantOf func(*item) int) {
	p, m := sk.p, sk.p.m
	unchanged := map[*Reason]int{}
	for _, c := range m.classes.list {
		var moved [2][]*item // the groups whose variant changed, by the one they have now
		for v := range 2 {
			for _, w := range splitVariants(c.settled[v], applies, bound) {
				if len(w.items) == 0 {
					continue
				}
				r := &sk.verdicts[verdictKey{c, w.variant}].Reason
				if w.variant != v {
					moved[w.variant] = append(moved[w.variant], w.items...) // a copy
				}
				// A settled group's reason is its class's (item.reason): a new verdict
				// of the same kind is the group's without a report.
				if c.canon[v] != nil && sameKind(*c.canon[v], *r) {
					unchanged[r] += len(w.items)
					continue
				}
				for _, it := range w.items {
					sk.report(it, r)
				}
			}
		}
		// The open groups that closed are the end of their list, the closed ones that
		// opened the start of theirs.
		c.settled[open] = c.settled[open][:len(c.settled[open])-len(moved[closed])]
		c.settled[closed] = slices.Delete(c.settled[closed], 0, len(moved[open]))
		for v := range 2 {
			for _, it := range moved[v] {
				it.variant = v
				c.settled[v] = insertSorted(c.settled[v], it, bySettled)
			}
			if vd, ok := sk.verdicts[verdictKey{c, v}]; ok && (c.canon[v] == nil || !sameReason(*c.canon[v], vd.Reason)) {
				canon := vd.Reason // a copy: the verdicts' array is reused
				c.canon[v] = &canon
			}
		}
	}
	// The groups the walk decided stay unsettled; the others are settled now.
	kept := m.unsettled[:0]
	for _, it := range m.unsettled {
		if it.pass == p.id {
			kept = append(kept, it)
			it.unsettledAt = len(kept)
			continue
		}
		v := variantOf(it)
		c := it.cls
		r := &sk.verdicts[verdictKey{c, v}].Reason
		if it.lastReason != nil && sameKind(*it.lastReason, *r) {
			unchanged[r]++
		} else {
			sk.report(it, r)
		}
		it.unsettledAt = 0
		it.variant, it.settled = v, true
		c.settled[v] = insertSorted(c.settled[v], it, bySettled)
	}
	clear(m.unsettled[len(kept):])
	m.unsettled = kept
	sk.list(unchanged)
}

func (sk *skip) report(it *item, r *Reason) {
	p := sk.p
	sk.reports = append(sk.reports, report{it: it, reason: r, qprio: p.m.queues[it.Queue].Priority, share: p.share(it.Queue)})
}

// list appends the reported groups to the pass's Waiting in the order the walk would
// have reached them (no group is admitted past the skip, so the queues' shares stay as
// they are), and the counts of the others.
func (sk *skip) list(unchanged map[*Reason]int) {
	p := sk.p
	slices.SortFunc(sk.reports, func(a, b report) int {
		if c := cmp.Compare(b.qprio, a.qprio); c != 0 {
			return c
		}
		if c := cmp.Compare(b.it.Priority, a.it.Priority); c != 0 {
			return c
		}
		if a.it.Queue != b.it.Queue {
			if c := cmp.Compare(a.share, b.share); c != 0 {
				return c
			}
		}
		return byEntry(a.it, b.it)
	})
	p.res.Waiting = slices.Grow(p.res.Waiting, len(sk.reports))
	for _, rep := range sk.reports {
		p.res.Waiting = append(p.res.Waiting, Waiting{Entry: &rep.it.Entry, Reason: *rep.reason})
		p.res.Waiting[len(p.res.Waiting)-1].Reason.subject = &rep.it.keyed
	}
	clear(sk.reports) // kept for the next pass, without the items
	p.m.reports = sk.reports[:0]
	for r, n := range unchanged {
		p.res.Unchanged = append(p.res.Unchanged, Unchanged{Reason: *r, Count: n})
	}
	slices.SortFunc(p.res.Unchanged, func(a, b Unchanged) int { return strings.Compare(string(a.Reason.Kind), string(b.Reason.Kind)) })
}

// Same reports whether r and o say the same about one group: rendered for it, they are
// the same text.
func (r Reason) Same(o Reason) bool { return sameReason(r, o) }

// sameKind reports whether a and b are reasons of one kind: the same ReasonKind, and
// both impossible or neither. ScheduleChanges lists a group when its kind of reason
// changes; Manager.Reason tells what it is now.
func sameKind(a, b Reason) bool { return a.Kind == b.Kind && a.Impossible() == b.Impossible() }

// sameReason reports whether a and b say the same about any group of one signature
// (the groups of a class): the same fields, and the same diagnosis once rendered for
// one group (placement.Diagnosis.Same).
func sameReason(a, b Reason) bool {
	if !sameFields(a, b) {
		return false
	}
	da, db := a.Diagnosis, b.Diagnosis
	if da == nil || db == nil {
		return da == db
	}
	return da.Same(db)
}

// sameFields reports whether a and b have the same fields, their diagnoses and subjects
// aside. It names every field, since reflect.DeepEqual showed in a replay's profile:
// TestSameFieldsNamesEveryField fails when Reason gains one.
func sameFields(a, b Reason) bool {
	return a.Kind == b.Kind && a.Queue == b.Queue && a.Namespace == b.Namespace &&
		slices.Equal(a.Candidates, b.Candidates) &&
		a.Resource == b.Resource && a.Need == b.Need && a.Used == b.Used && a.Quota == b.Quota &&
		a.Cohort == b.Cohort && a.CohortUsed == b.CohortUsed && a.CohortQuota == b.CohortQuota && a.Limit == b.Limit &&
		a.Reclaimable == b.Reclaimable && a.BorrowingPaused == b.BorrowingPaused &&
		a.ReservedFor == b.ReservedFor && a.ForPreemption == b.ForPreemption
}
