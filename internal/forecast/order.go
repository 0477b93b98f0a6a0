package forecast

import (
	"cmp"
	"slices"
)

// order is what is kept of the order of the later releases from one plan to the next:
// most are those of the last plan, at the same times, and need not be sorted again.
type order struct {
	// last is the last plan's later releases, by time and node.
	last []orderRef
	// pos and k hold, by slot, the index of the release in this plan's later releases
	// before they are sorted (-1 when it is not among them), and its index among its
	// node's releases.
	pos, k []int
	// taken marks, by index, the later releases in last; kept and fresh are scratch.
	taken       []bool
	kept, fresh []release
}

// orderRef is a release of a plan: the k-th of the node read, at time at.
type orderRef struct {
	read *nodeRead
	k    int
	at   int64
}

// startPlan readies o for a plan of n releases.
func (o *order) startPlan(n int) {
	o.pos = slices.Grow(o.pos[:0], n)[:n]
	for i := range o.pos {
		o.pos[i] = -1
	}
	o.k = resize(o.k, n)
}

// orderLater sorts later, indexed as o.pos says, by time and node, and keeps their
// order for the next plan. The releases that were in the last plan's, on the same node
// among its releases at the same index and at the same time, are in the same order as
// then (a node keeps its place among the nodes by name), and only the others are
// sorted, then merged in.
func (p *profile) orderLater(later []release) []release {
	o := &p.order
	o.taken = resize(o.taken, len(later))
	kept := o.kept[:0]
	for _, ref := range o.last {
		r := ref.read
		if r.pass != p.pass || ref.k >= len(r.slots) {
			continue
		}
		if i := o.pos[r.slots[ref.k]]; i >= 0 && later[i].at == ref.at {
			o.taken[i] = true
			kept = append(kept, later[i])
		}
	}
	fresh := o.fresh[:0]
	for i, rel := range later {
		if !o.taken[i] {
			fresh = append(fresh, rel)
		}
	}
	slices.SortFunc(fresh, byTimeAndNode)
	out := merge(later[:0], kept, fresh)
	o.kept, o.fresh = kept, fresh
	o.last = o.last[:0]
	for _, rel := range out {
		o.last = append(o.last, orderRef{read: p.readOf[rel.node], k: o.k[rel.slot], at: rel.at})
	}
	return out
}

// merge appends to dst the releases of a and b, each by time and node, by time and
// node; dst shares neither's array.
func merge(dst, a, b []release) []release {
	for len(a) > 0 && len(b) > 0 {
		if byTimeAndNode(a[0], b[0]) <= 0 {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	dst = append(dst, a...)
	return append(dst, b...)
}

// byTimeAndNode orders releases by time, then node. Written out rather than with
// cmp.Or, which compares the nodes of every pair: a forecast sorts hundreds.
func byTimeAndNode(a, b release) int {
	if a.at != b.at {
		return cmp.Compare(a.at, b.at)
	}
	return cmp.Compare(a.node, b.node)
}
