package queue

import (
	"cmp"
	"iter"
	"slices"
	"strings"
	"time"
)

// order keeps the queued items sorted as Schedule walks them, updated on each Push and
// Remove, so that a pass does not sort the whole queue again: one lane per queue and
// group priority, sorted by byEntry, and every item by queue time for the
// starvation threshold. Each update is a binary search and a copy of the pointers after
// the insertion point.
type order struct {
	lanes map[laneKey]*lane
	// byQueued holds every item sorted by QueuedAt, then key.
	byQueued []*item
}

type laneKey struct {
	queue    string
	priority int32
}

// lane is the items of one queue and group priority, in byEntry order.
type lane struct {
	laneKey
	items []*item
}

func newOrder() order { return order{lanes: map[laneKey]*lane{}} }

// byEntry orders two groups of queues of equal priority: priority, higher first;
// never-failed before requeued; (re)queue time plus handicap (item.ordered, added once at
// Push: passes sort and insert items by it many times), earlier first; key. Between
// groups of different queues fairness comes before all but priority (see walk).
func byEntry(a, b *item) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if a.Requeued != b.Requeued {
		if a.Requeued {
			return 1
		}
		return -1
	}
	if c := a.ordered.Compare(b.ordered); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

func byQueuedAt(a, b *item) int {
	if c := a.QueuedAt.Compare(b.QueuedAt); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

func (o *order) add(it *item) {
	k := laneKey{it.Queue, it.Priority}
	l := o.lanes[k]
	if l == nil {
		l = &lane{laneKey: k}
		o.lanes[k] = l
	}
	l.items = insertSorted(l.items, it, byEntry)
	o.byQueued = insertSorted(o.byQueued, it, byQueuedAt)
}

// removeFromLane takes it out of its lane; the walk defers this for the groups a pass
// admits, since it iterates the lanes.
func (o *order) removeFromLane(it *item) {
	k := laneKey{it.Queue, it.Priority}
	if l := o.lanes[k]; l != nil {
		l.items = removeSorted(l.items, it, byEntry)
		if len(l.items) == 0 {
			delete(o.lanes, k)
		}
	}
}

func (o *order) removeFromQueued(it *item) { o.byQueued = removeSorted(o.byQueued, it, byQueuedAt) }

func insertSorted(s []*item, it *item, less func(a, b *item) int) []*item {
	i, _ := slices.BinarySearchFunc(s, it, less)
	return slices.Insert(s, i, it)
}

func removeSorted(s []*item, it *item, less func(a, b *item) int) []*item {
	if i, ok := slices.BinarySearchFunc(s, it, less); ok && s[i] == it {
		return slices.Delete(s, i, i+1)
	}
	return s
}

// bands returns the lanes in walk order grouped into bands of equal queue priority and
// group priority, higher first; within a band, lanes are sorted by queue name.
func (m *Manager) bands() [][][]*item {
	lanes := make([]*lane, 0, len(m.order.lanes))
	for _, l := range m.order.lanes {
		lanes = append(lanes, l)
	}
	prio := func(l *lane) int32 { return m.queues[l.queue].Priority }
	slices.SortFunc(lanes, func(a, b *lane) int {
		if c := cmp.Compare(prio(b), prio(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.priority, a.priority); c != 0 {
			return c
		}
		return strings.Compare(a.queue, b.queue)
	})
	var out [][][]*item
	for i, l := range lanes {
		if i == 0 || prio(l) != prio(lanes[i-1]) || l.priority != lanes[i-1].priority {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], l.items)
	}
	return out
}

// NextStarve returns the earliest time after now at which a queued group crosses the
// starvation threshold, or zero if none will.
func (m *Manager) NextStarve(now time.Time) time.Time {
	thr := m.opts.StarvationThreshold
	q := m.order.byQueued
	i, _ := slices.BinarySearchFunc(q, now, func(it *item, now time.Time) int {
		if it.QueuedAt.Add(thr).After(now) {
			return 1
		}
		return -1
	})
	if i == len(q) {
		return time.Time{}
	}
	return q[i].QueuedAt.Add(thr)
}

// HighestPriority returns the highest priority of a queued group, and false if none is
// queued.
func (m *Manager) HighestPriority() (int32, bool) {
	var best int32
	found := false
	for k := range m.order.lanes {
		if !found || k.priority > best {
			best, found = k.priority, true
		}
	}
	return best, found
}

// InOrder yields the queued groups in the order passes walk them, as far as it does not
// depend on the pass: bands of equal queue and group priority, higher first, and
// within a band the queues' heads by byEntry (a pass takes them by fairness,
// which moves with each admission). The entries are the manager's: callers must not
// modify them.
func (m *Manager) InOrder() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		for _, band := range m.bands() {
			heads := slices.Clone(band)
			for len(heads) > 0 {
				best := 0
				for i := 1; i < len(heads); i++ {
					if byEntry(heads[i][0], heads[best][0]) < 0 {
						best = i
					}
				}
				it := heads[best][0]
				if heads[best] = heads[best][1:]; len(heads[best]) == 0 {
					heads = slices.Delete(heads, best, best+1)
				}
				if !yield(&it.Entry) {
					return
				}
			}
		}
	}
}
