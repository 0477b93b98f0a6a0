package forecast

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// profile is every node's free capacity over time, in the resources the groups ask
// for.
type profile struct {
	now  int64
	dims []corev1.ResourceName
	// names and nodes are the nodes' names, sorted, and their free capacity over time.
	names []string
	nodes []levels
	// overcommitted marks the nodes with less than nothing free at some time when the
	// profile was built (pods that are not muster's may ask for more than allocatable).
	// The others never go below zero: a take takes only what is free throughout.
	overcommitted []bool
	// total is what all nodes have free together over time, to rule candidates out
	// before nodes are looked at; its instants are those at which some node's free
	// capacity or some quota changes, from now on: the candidate starts.
	total levels
	// events are every node's instants after now, by time: the nodes a moving window
	// passes over. A node may have more events than instants, never fewer.
	events []event
	// capacity is, per dimension, the most the nodes will have free in all: what is
	// free now and every release.
	capacity []int64
	// work is plan's scratch space, reused from one group to the next.
	work work
	// quotas are the queues' quotas over time, by queue: each a profile of its own
	// dimensions, the resources the quota lists.
	quotas map[string]*quotaProfile
	// buf holds the arrays reset works in, kept for the next forecast (Planner).
	buf struct {
		free, deltas, at, vals []int64
		later                  []release
		count                  []int
	}
	// reads holds what the plans read of each node, by name, in the dimensions readDims,
	// for the next plan of the node under the same Gen; readOf is the record of each of
	// the nodes, by index, in this plan.
	reads    map[string]*nodeRead
	readDims []corev1.ResourceName
	readOf   []*nodeRead
	// pass counts the plans, to tell the records of this plan's nodes (nodeRead.pass).
	pass uint64
	// fromReads holds the Group.From lists this plan read (readList).
	fromReads map[fromKey]*fromRead
	// order is the order the last plan put its later releases in (see orderLater).
	order order
}

// nodeRead is what a plan read of node name under Gen gen: what it has free now, and the
// resources of its releases, flat, in the order they were given. pass is the last plan
// of the node, and slots the indexes of its releases among that plan's.
type nodeRead struct {
	name   string
	gen    uint64
	free   []int64
	deltas []int64
	pass   uint64
	slots  []int
}

// event says node (an index into profile.nodes) changes at at.
type event struct {
	at   int64
	node int
}

// release is a Release in the profile: its node's index, and where its delta is in
// newProfile's flat slice of them.
type release struct {
	at         int64
	node, slot int
}

func newProfile(now time.Time, nodes []Node, releases []Release, groups []Group) *profile {
	p := &profile{}
	p.reset(now, nodes, releases, groups)
	return p
}

// reset makes p the profile of nodes with releases, for groups, at now, in the arrays
// of its last forecast where they are large enough.
func (p *profile) reset(now time.Time, nodes []Node, releases []Release, groups []Group) {
	p.now, p.dims = now.UnixNano(), dimsOf(p.dims[:0], groups)
	p.pass++
	clear(p.quotas)
	clear(p.fromReads) // the lists are the caller's, and may be another plan's next time
	p.work.kept, p.work.taken = keptWindow{}, p.work.taken[:0]
	d := len(p.dims)
	free := p.addNodes(nodes)
	// Releases at or before now are free now; the rest, by time, are the nodes'
	// instants and the cluster's.
	later := slices.Grow(p.buf.later[:0], len(releases))
	deltas := resize(p.buf.deltas, len(releases)*d)
	p.buf.later, p.buf.deltas = later, deltas
	o := &p.order
	o.startPlan(len(releases))
	last := -1
	for i, r := range releases {
		if last = p.nodeAfter(last, r.Node); last < 0 {
			continue
		}
		delta := deltas[i*d : (i+1)*d : (i+1)*d]
		p.readRelease(delta, r.Resources, last, i)
		if r.Held {
			continue
		}
		if at := r.At.UnixNano(); at > p.now {
			o.pos[i] = len(later)
			later = append(later, release{at: at, node: last, slot: i})
		} else {
			addTo(free[last*d:(last+1)*d], delta, 1)
		}
	}
	p.buf.later = later
	later = p.orderLater(later)
	// Each member planned adds at most two events.
	members := 0
	for _, g := range groups {
		members += len(g.Members)
	}
	p.events = slices.Grow(p.events[:0], len(later)+2*members)
	p.buildTotal(free, later, deltas)
	p.buildNodes(free, later, deltas)
}

// resize returns s with length n, zeroed, in its array if it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// dimsOf appends to dims the resources groups' members ask for, but pods, sorted: the
// profile's dimensions. A node's pod count is left to the placement.
func dimsOf(dims []corev1.ResourceName, groups []Group) []corev1.ResourceName {
	for _, g := range groups {
		for v := range 1 + len(g.Variants) {
			members := g.Members
			if v > 0 {
				members = g.Variants[v-1]
			}
			for _, m := range members {
				for name := range m {
					if name != corev1.ResourcePods && !slices.Contains(dims, name) {
						dims = append(dims, name)
					}
				}
			}
		}
	}
	slices.Sort(dims)
	return dims
}

// addNodes sets the profile's nodes' names, sorted, and their records (readOf), and
// returns what each has free now, flat.
func (p *profile) addNodes(nodes []Node) []int64 {
	byName := func(a, b Node) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(nodes, byName) {
		nodes = slices.Clone(nodes)
		slices.SortStableFunc(nodes, byName)
	}
	if !slices.Equal(p.readDims, p.dims) {
		p.readDims = append(p.readDims[:0], p.dims...)
		clear(p.reads)
	}
	d := len(p.dims)
	free := resize(p.buf.free, len(nodes)*d)
	p.buf.free = free
	p.names = slices.Grow(p.names[:0], len(nodes))
	p.readOf = slices.Grow(p.readOf[:0], len(nodes))
	for i, n := range nodes {
		p.names = append(p.names, n.Name)
		p.readOf = append(p.readOf, p.readNode(free[i*d:(i+1)*d], n))
	}
	p.dropGone()
	return free
}

// dropGone forgets the records of the nodes gone since they were read: those not
// among this plan's, when there are more records than its nodes.
func (p *profile) dropGone() {
	if len(p.reads) <= len(p.readOf) {
		return
	}
	keep := make(map[string]*nodeRead, len(p.readOf))
	for _, r := range p.readOf {
		keep[r.name] = r
	}
	p.reads = keep
}

// readNode writes into free what node n has free now, from its record if it was read
// under the same Gen, and returns its record, made current.
func (p *profile) readNode(free []int64, n Node) *nodeRead {
	r := p.reads[n.Name]
	if r == nil {
		if p.reads == nil {
			p.reads = map[string]*nodeRead{}
		}
		r = &nodeRead{name: n.Name}
		p.reads[n.Name] = r
	}
	r.pass, r.slots = p.pass, r.slots[:0]
	if n.Gen != 0 && r.gen == n.Gen {
		copy(free, r.free)
		return r
	}
	p.read(free, n.Free, 1)
	p.read(free, n.Used, -1)
	r.gen, r.free, r.deltas = n.Gen, append(r.free[:0], free...), r.deltas[:0]
	return r
}

// readRelease writes into delta the resources res of the release in slot i, the next
// of node ni, from the node's record when it holds them, else read and added to it; and
// adds the slot to the record.
func (p *profile) readRelease(delta []int64, res cluster.Resources, ni, i int) {
	r, d := p.readOf[ni], len(delta)
	k := len(r.slots)
	r.slots = append(r.slots, i)
	p.order.k[i] = k
	if (k+1)*d <= len(r.deltas) {
		copy(delta, r.deltas[k*d:(k+1)*d])
		return
	}
	p.read(delta, res, 1)
	if k*d == len(r.deltas) {
		r.deltas = append(r.deltas, delta...)
	}
}

// nodeAfter is the index of the node named name, or -1, given that of the node named
// by the release before it, last: releases come by node, often in the nodes' order.
func (p *profile) nodeAfter(last int, name string) int {
	switch {
	case last >= 0 && p.names[last] == name:
		return last
	case last+1 < len(p.names) && p.names[last+1] == name:
		return last + 1
	}
	return p.nodeIndex(name)
}

// nodeIndex is the index of the node named name, or -1.
func (p *profile) nodeIndex(name string) int {
	if i, found := slices.BinarySearch(p.names, name); found {
		return i
	}
	return -1
}

// read adds sign times r, in the profile's dimensions, to dst.
func (p *profile) read(dst []int64, r cluster.Resources, sign int64) {
	if len(r) == 0 {
		return
	}
	for i, name := range p.dims {
		dst[i] += sign * r[name]
	}
}

// buildTotal sets the cluster-wide totals, from what the nodes have free now and the
// later releases, by time, and the most the nodes will have free in all.
func (p *profile) buildTotal(free []int64, later []release, deltas []int64) {
	d := len(p.dims)
	p.total = levels{d: d, at: append(slices.Grow(p.total.at[:0], len(later)+1), p.now),
		vals: resize(slices.Grow(p.total.vals[:0], (len(later)+1)*d), d)}
	for ni := range p.names {
		addTo(p.total.vals, free[ni*d:(ni+1)*d], 1)
	}
	for _, r := range later {
		if p.total.at[len(p.total.at)-1] != r.at {
			p.total.at = append(p.total.at, r.at)
			p.total.vals = append(p.total.vals, p.total.vals[len(p.total.vals)-d:]...)
		}
		addTo(p.total.vals[len(p.total.vals)-d:], deltas[r.slot*d:(r.slot+1)*d], 1)
	}
	p.capacity = append(p.capacity[:0], p.total.vals[len(p.total.vals)-d:]...)
}

// buildNodes sets each node's levels, from what it has free now and the later
// releases, by time, and the events. The nodes' levels are cut from two backing
// slices; a take that adds an instant to one moves it out.
func (p *profile) buildNodes(free []int64, later []release, deltas []int64) {
	d, n := len(p.dims), len(p.names)
	// count[ni] is node ni's instants, then where they start in the backing slices.
	count := resize(p.buf.count, n+1)
	p.buf.count = count
	for i, r := range later {
		if i == 0 || later[i-1].at != r.at || later[i-1].node != r.node {
			count[r.node]++
			p.events = append(p.events, event{at: r.at, node: r.node})
		}
	}
	start := 0
	for ni := range n {
		c := count[ni] + 1 // now, and its instants
		count[ni] = start
		start += c
	}
	count[n] = start
	at, vals := resize(p.buf.at, start), resize(p.buf.vals, start*d)
	p.buf.at, p.buf.vals = at, vals
	p.nodes = resize(p.nodes, n)
	for ni := range p.nodes {
		lo, hi := count[ni], count[ni+1]
		at[lo] = p.now
		copy(vals[lo*d:], free[ni*d:(ni+1)*d])
		p.nodes[ni] = levels{d: d, at: at[lo : lo+1 : hi], vals: vals[lo*d : (lo+1)*d : hi*d]}
	}
	// later is by time: each node's releases are appended in order.
	for _, r := range later {
		l := &p.nodes[r.node]
		if l.at[len(l.at)-1] != r.at {
			l.at = append(l.at, r.at)
			l.vals = append(l.vals, l.vals[len(l.vals)-d:]...)
		}
		addTo(l.vals[len(l.vals)-d:], deltas[r.slot*d:(r.slot+1)*d], 1)
	}
	p.overcommitted = resize(p.overcommitted, n)
	for ni := range p.nodes {
		p.overcommitted[ni] = p.nodes[ni].negative()
	}
}

func addTo(dst, v []int64, sign int64) {
	for i := range dst {
		dst[i] += sign * v[i]
	}
}
