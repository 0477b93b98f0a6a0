package queue

import (
	"cmp"
	"iter"
	"slices"

	"github.com/muster-sched/muster/internal/cluster"
)

// walk yields the queued groups in admission order, one at a time, so that each is
// ordered with the usage left by the decisions on the groups before it.
//
// Groups come in bands of equal queue priority and group priority, higher first.
// Within a band each queue's groups keep their order (byEntry), and the queues
// take turns by fairness: the next group is the head of the queue with the lowest
// weighted share, ties broken by byEntry of the heads. A queue's weighted share
// is its dominant share (the largest, over the cluster's resources, of the fraction of
// the cluster's allocatable its admitted groups hold) divided by its weight: queues of
// weights 2 and 1 that keep asking converge to holding two thirds and one third of
// their dominant resource. With one queue in a band this is the queue's own order.
func (p *pass) walk() iter.Seq[*item] {
	return func(yield func(*item) bool) {
		for _, band := range p.m.bands() {
			if !p.fairly(band, yield) {
				return
			}
		}
	}
}

// fairly yields one band's groups, given per queue in byEntry order (queues
// sorted by name), taking the queues in turn by weighted share. It returns false if
// yield did.
func (p *pass) fairly(heads [][]*item, yield func(*item) bool) bool {
	if len(heads) == 1 {
		for _, it := range heads[0] {
			if !yield(it) {
				return false
			}
		}
		return true
	}
	heads = slices.Clone(heads)
	for len(heads) > 0 {
		best, bestShare := 0, p.share(heads[0][0].Queue)
		for i := 1; i < len(heads); i++ {
			s := p.share(heads[i][0].Queue)
			if c := cmp.Compare(s, bestShare); c < 0 || c == 0 && byEntry(heads[i][0], heads[best][0]) < 0 {
				best, bestShare = i, s
			}
		}
		it := heads[best][0]
		if heads[best] = heads[best][1:]; len(heads[best]) == 0 {
			heads = slices.Delete(heads, best, best+1)
		}
		if !yield(it) {
			return false
		}
	}
	return true
}

// share returns a queue's weighted share of the cluster (see walk), computed once per
// change of the queue's usage in the pass (see admit).
func (p *pass) share(queue string) float64 {
	if s, ok := p.shares[queue]; ok {
		return s
	}
	s := WeightedShare(p.m.usedBy(queue), p.snap.Allocatable(), p.m.queues[queue].Weight)
	p.shares[queue] = s
	return s
}

// Shares returns each queue's weighted share of snapshot s's allocatable: the share by
// which Schedule orders the queues of one priority.
func (m *Manager) Shares(s *cluster.Snapshot) map[string]float64 {
	capacity := s.Allocatable()
	out := make(map[string]float64, len(m.queues))
	for name, q := range m.queues {
		out[name] = WeightedShare(m.usedBy(name), capacity, q.Weight)
	}
	return out
}

// WeightedShare is the dominant share of used in capacity (the largest fraction of a
// resource's capacity that used holds, over the resources capacity has) divided by
// weight; a weight below 1 counts as 1. Resources the cluster lacks do not count.
func WeightedShare(used, capacity cluster.Resources, weight int32) float64 {
	dominant := 0.0
	for name, v := range used {
		if total := capacity[name]; total > 0 && v > 0 {
			dominant = max(dominant, float64(v)/float64(total))
		}
	}
	return dominant / float64(max(weight, 1))
}
