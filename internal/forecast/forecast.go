// Package forecast predicts when queued groups start. It builds a profile of the
// cluster's free capacity over time, from what each node has free now and what the
// groups running there release when they are expected to end, and plans the queued
// groups into it in queue order: each at the earliest time its members fit whole, for as
// long as it is expected to run (conservative backfill, the way Slurm's backfill
// scheduler plans its queue). A group planned without a run time holds its capacity for
// ever, as does a running group whose end is unknown, so a forecast never counts on
// capacity nobody said would come back.
//
// The profile counts resources only: node selectors, affinity, topology and devices
// are the placement's business, and the forecast of a group they constrain is a lower
// bound. The package is pure: no clock, no API, no engine.
package forecast

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// Node is a node that takes pods, with what it has free now.
type Node struct {
	Name string
	Free cluster.Resources
}

// Release is capacity a running group gives back on one node when it is expected to
// end.
type Release struct {
	Node      string
	At        time.Time
	Resources cluster.Resources
}

// Group is a queued group to plan: the members that must start together.
type Group struct {
	Key string
	// Queue and Charge are the group's queue and what it charges the queue's quota when
	// admitted; without a Quota for the queue they do not matter.
	Queue  string
	Charge cluster.Resources
	// Members are the requests of the members that must start together (MinMember of
	// them).
	Members []cluster.Resources
	// Runtime is how long the group is expected to run once started; zero when unknown,
	// and the group then holds what it is planned on for ever.
	Runtime time.Duration
}

// Start is a group's predicted start, or why there is none.
type Start struct {
	Key string
	// At is when the group is expected to start; zero when unknown.
	At time.Time
	// Unknown says why At is zero.
	Unknown string
	// Nodes are the nodes the group is planned on at At, sorted.
	Nodes []string
}

// Options bound a forecast's work.
type Options struct {
	// Depth is how many groups are planned, in order; later ones are unknown. Zero
	// plans every group.
	Depth int
	// Tries is how many of the times at which capacity is freed are tried per group
	// before it is given up as unknown. Zero tries every time.
	Tries int
}

// never is the end of capacity that does not come back.
const never = math.MaxInt64

// Plan predicts the start of each of groups, given in queue order, at time now, on
// nodes with releases, within the quotas of their queues. It returns one Start per
// group, in the same order.
func Plan(now time.Time, nodes []Node, releases []Release, quotas []Quota, groups []Group, opts Options) []Start {
	p := newProfile(now, nodes, releases, groups)
	p.addQuotas(quotas)
	out := make([]Start, len(groups))
	for i, g := range groups {
		out[i].Key = g.Key
		switch {
		case opts.Depth > 0 && i >= opts.Depth:
			out[i].Unknown = fmt.Sprintf("muster forecasts the first %d groups in order, and it comes after them", opts.Depth)
		case len(g.Members) == 0:
			out[i].Unknown = "it has no member to place"
		default:
			at, nodes, why := p.plan(g, opts.Tries)
			if why != "" {
				out[i].Unknown = why
			} else {
				out[i].At, out[i].Nodes = time.Unix(0, at).UTC(), nodes
			}
		}
	}
	return out
}

// profile is every node's free capacity over time, in the resources the groups ask
// for.
type profile struct {
	now   int64
	dims  []corev1.ResourceName
	nodes []*nodeProfile
	// times are the instants at which some node's free capacity changes, from now on,
	// sorted: the candidate starts. total[i] is what all nodes have free together from
	// times[i] until times[i+1], to rule candidates out before nodes are looked at.
	times []int64
	total [][]int64
	// events are every node's steps, by time: the nodes a moving window passes over.
	events []event
	// capacity is, per dimension, the most the nodes will have free in all: what is
	// free now and every release.
	capacity []int64
	// work is plan's scratch space, reused from one group to the next.
	work *work
	// quotas are the queues' quotas over time, by queue: each a profile of its own
	// dimensions, the resources the quota lists.
	quotas map[string]*quotaProfile
}

// addTime makes at a candidate time, with the cluster-wide totals in force then.
func (p *profile) addTime(at int64) {
	if k, found := slices.BinarySearch(p.times, at); !found {
		p.times = slices.Insert(p.times, k, at)
		p.total = slices.Insert(p.total, k, slices.Clone(p.total[k-1]))
	}
}

// work is the scratch space of plan, sized for the profile's nodes and dimensions.
type work struct {
	avail, packing [][]int64
	roomOf         []int
	dirty          []bool
	scratch        []int64
	touched        []int
	window         []int
}

func (p *profile) scratchSpace() *work {
	if p.work != nil {
		return p.work
	}
	n, d := len(p.nodes), len(p.dims)
	rows := func() [][]int64 {
		flat, out := make([]int64, n*d), make([][]int64, n)
		for i := range out {
			out[i] = flat[i*d : (i+1)*d : (i+1)*d]
		}
		return out
	}
	p.work = &work{avail: rows(), packing: rows(), roomOf: make([]int, n), dirty: make([]bool, n), scratch: make([]int64, d)}
	return p.work
}

// nodeProfile is one node's free capacity: free from now until the first step, then
// changed by each step in turn.
type nodeProfile struct {
	name  string
	free  []int64
	steps []step
}

// event says node (an index into profile.nodes) has a step at at.
type event struct {
	at   int64
	node int
}

// step changes a node's free capacity by delta from at on.
type step struct {
	at    int64
	delta []int64
}

func newProfile(now time.Time, nodes []Node, releases []Release, groups []Group) *profile {
	p := &profile{now: now.UnixNano()}
	seen := map[corev1.ResourceName]bool{}
	for _, g := range groups {
		for _, m := range g.Members {
			for name := range m {
				if !seen[name] && name != corev1.ResourcePods {
					seen[name] = true
					p.dims = append(p.dims, name)
				}
			}
		}
	}
	slices.Sort(p.dims)
	byName := make(map[string]*nodeProfile, len(nodes))
	p.capacity = make([]int64, len(p.dims))
	for _, n := range nodes {
		np := &nodeProfile{name: n.Name, free: p.vector(n.Free)}
		p.nodes = append(p.nodes, np)
		byName[n.Name] = np
	}
	slices.SortFunc(p.nodes, func(a, b *nodeProfile) int { return cmp.Compare(a.name, b.name) })
	times := []int64{p.now}
	for _, r := range releases {
		np := byName[r.Node]
		if np == nil {
			continue
		}
		at := max(r.At.UnixNano(), p.now)
		if at == p.now {
			addTo(np.free, p.vector(r.Resources), 1)
			continue
		}
		np.steps = append(np.steps, step{at: at, delta: p.vector(r.Resources)})
		times = append(times, at)
	}
	for _, np := range p.nodes {
		slices.SortStableFunc(np.steps, func(a, b step) int { return cmp.Compare(a.at, b.at) })
		np.steps = mergeSteps(np.steps)
		peak := slices.Clone(np.free)
		for _, s := range np.steps {
			addTo(peak, s.delta, 1)
		}
		addTo(p.capacity, peak, 1)
	}
	slices.Sort(times)
	p.times = slices.Compact(times)
	p.total = make([][]int64, len(p.times))
	cur := make([]int64, len(p.dims))
	for _, np := range p.nodes {
		addTo(cur, np.free, 1)
	}
	var steps []step
	for ni, np := range p.nodes {
		steps = append(steps, np.steps...)
		for _, st := range np.steps {
			p.events = append(p.events, event{at: st.at, node: ni})
		}
	}
	slices.SortStableFunc(p.events, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	slices.SortFunc(steps, func(a, b step) int { return cmp.Compare(a.at, b.at) })
	k := 0
	for i, t := range p.times {
		for ; k < len(steps) && steps[k].at <= t; k++ {
			addTo(cur, steps[k].delta, 1)
		}
		p.total[i] = slices.Clone(cur)
	}
	return p
}

// vector is r in the profile's dimensions.
func (p *profile) vector(r cluster.Resources) []int64 {
	v := make([]int64, len(p.dims))
	for i, name := range p.dims {
		v[i] = r[name]
	}
	return v
}

func addTo(dst, v []int64, sign int64) {
	for i := range dst {
		dst[i] += sign * v[i]
	}
}

// plan finds the earliest candidate time at which g's members fit for its run time,
// takes their capacity in the profile, and returns that time; or why none was found.
func (p *profile) plan(g Group, tries int) (int64, []string, string) {
	members := make([][]int64, len(g.Members))
	need := make([]int64, len(p.dims))
	for i, m := range g.Members {
		members[i] = p.vector(m)
		addTo(need, members[i], 1)
	}
	for i := range need {
		if need[i] > p.capacity[i] {
			return 0, nil, fmt.Sprintf("only %s of the %s %s its members ask for are free or expected to be freed: "+
				"groups with no expected run time, or pods that are not muster's, hold the rest",
				cluster.Format(p.dims[i], p.capacity[i]), cluster.Format(p.dims[i], need[i]), p.dims[i])
		}
	}
	qp, charge := p.charge(g)
	if qp != nil {
		for i, v := range charge {
			if v > qp.peak[i] {
				return 0, nil, fmt.Sprintf("only %s of queue %s's quota of %s is left or expected to be given back, "+
					"and it charges %s: groups with no expected run time hold the rest",
					cluster.Format(qp.dims[i], qp.peak[i]), qp.queue, qp.dims[i], cluster.Format(qp.dims[i], v))
			}
		}
	}
	var quotaLeft, quotaScratch []int64
	if qp != nil {
		quotaLeft, quotaScratch = make([]int64, len(qp.dims)), make([]int64, len(qp.dims))
	}
	if !slices.ContainsFunc(need, func(v int64) bool { return v > 0 }) {
		// It asks for nothing the profile's nodes count (devices by claim, say): only
		// its queue's quota can hold it back.
		for _, t := range p.times {
			end := int64(never)
			if g.Runtime > 0 {
				end = t + int64(g.Runtime)
			}
			if qp.fitsQuota(charge, t, end, quotaLeft, quotaScratch) {
				qp.takeQuota(charge, t, end)
				return t, nil, ""
			}
		}
		return 0, nil, "it does not fit the quota expected to be left: groups ahead of it, or groups running with no expected run time, hold it"
	}
	// Larger members first, each on the node it fits most tightly (best fit by the
	// first dimension the group asks most of), as placement packs.
	lead := 0
	for i := range need {
		if need[i] > 0 && (need[lead] == 0 || cluster.IsExtended(p.dims[i]) && !cluster.IsExtended(p.dims[lead])) {
			lead = i
		}
	}
	slices.SortStableFunc(members, func(a, b []int64) int { return cmp.Compare(b[lead], a[lead]) })
	// Each node's capacity free throughout the window is kept from one candidate to
	// the next, and computed again only for the nodes with a step the window moved
	// over; room counts the copies of the smallest member they have room for in the
	// lead dimension, which rules most candidates out before the members are packed.
	smallest := members[len(members)-1][lead]
	// Every node's avail and roomOf are computed on the first candidate tried; dirty is
	// all false between candidates.
	w := p.scratchSpace()
	avail, packing, roomOf, dirty, scratch := w.avail, w.packing, w.roomOf, w.dirty, w.scratch
	touched := w.touched[:0]
	defer func() { w.touched = touched }()
	chosen := make([]int, len(members))
	refresh := func(ni int, t, end int64) {
		p.nodes[ni].availIn(t, end, avail[ni], scratch)
		if smallest > 0 {
			roomOf[ni] = int(avail[ni][lead] / smallest)
		}
	}
	room, computed := 0, false
	var lastEnd int64
	var fromT, fromEnd int
	// The window [t, end) slides forward with t: the least total of the lead dimension
	// in it is kept in a monotonic deque of time indexes (window minimum).
	window := w.window[:0]
	defer func() { w.window = window }()
	j, tried, head := 0, 0, 0 // the deque is window[head:]
	for i, t := range p.times {
		end := int64(never)
		if g.Runtime > 0 {
			end = t + int64(g.Runtime)
		}
		for ; j < len(p.times) && p.times[j] < end; j++ {
			for len(window) > head && p.total[window[len(window)-1]][lead] >= p.total[j][lead] {
				window = window[:len(window)-1]
			}
			window = append(window, j)
		}
		for window[head] < i {
			head++
		}
		if p.total[window[head]][lead] < need[lead] {
			continue // not enough of it free in all, whatever the nodes
		}
		if !qp.fitsQuota(charge, t, end, quotaLeft, quotaScratch) {
			continue // its queue's quota is not enough then, whatever the nodes
		}
		if tries > 0 && tried == tries {
			return 0, nil, fmt.Sprintf("it fits none of the next %d times enough capacity is expected to be free in all", tries)
		}
		tried++
		if !computed {
			for ni := range p.nodes {
				refresh(ni, t, end)
			}
			room = 0
			for _, r := range roomOf {
				room += r
			}
			computed = true
			// The events after t and after end-1: both only move forward, and the
			// events do not change until the group is planned.
			fromT, fromEnd = p.firstEvent(t), p.firstEvent(end-1)
		} else {
			touched, fromT = p.stepsUpTo(fromT, t, touched[:0], dirty)
			if lastEnd != never {
				touched, fromEnd = p.stepsUpTo(fromEnd, end-1, touched, dirty)
			}
			for _, ni := range touched {
				dirty[ni] = false
				room -= roomOf[ni]
				refresh(ni, t, end)
				room += roomOf[ni]
			}
		}
		lastEnd = end
		if smallest > 0 && room < len(members) {
			continue
		}
		for ni := range packing {
			copy(packing[ni], avail[ni])
		}
		if !pack(members, packing, lead, chosen) {
			continue
		}
		var nodes []string
		for mi, ni := range chosen {
			p.take(ni, t, end, members[mi])
			nodes = append(nodes, p.nodes[ni].name)
		}
		p.takeTotal(t, end, need)
		qp.takeQuota(charge, t, end)
		slices.Sort(nodes)
		return t, slices.Compact(nodes), ""
	}
	if qp != nil {
		return 0, nil, "it does not fit the capacity and quota expected to be free: groups ahead of it, or groups running with no expected run time, hold them"
	}
	return 0, nil, "it does not fit the capacity expected to be free: groups ahead of it, or groups running with no expected run time, hold it"
}

// firstEvent is the index of the first event after at.
func (p *profile) firstEvent(at int64) int {
	return firstAfter(p.events, at, func(e event) int64 { return e.at })
}

// stepsUpTo appends to out the nodes, not yet marked in dirty, with an event from
// index k up to time to, marks them, and returns the index of the first event after to.
func (p *profile) stepsUpTo(k int, to int64, out []int, dirty []bool) ([]int, int) {
	for ; k < len(p.events) && p.events[k].at <= to; k++ {
		if ni := p.events[k].node; !dirty[ni] {
			dirty[ni] = true
			out = append(out, ni)
		}
	}
	return out, k
}

// take removes r from node ni's free capacity during [t, end).
func (p *profile) take(ni int, t, end int64, r []int64) {
	np := p.nodes[ni]
	neg := make([]int64, len(r))
	addTo(neg, r, -1)
	np.insert(step{at: t, delta: neg})
	p.addEvent(event{at: t, node: ni})
	if end != never {
		np.insert(step{at: end, delta: slices.Clone(r)})
		p.addEvent(event{at: end, node: ni})
	}
}

func (p *profile) addEvent(e event) {
	p.events = slices.Insert(p.events, firstAfter(p.events, e.at, func(x event) int64 { return x.at }), e)
}

// firstAfter returns the index of the first element of s, sorted by at, whose at is
// after at: where an element at at goes after those already there.
func firstAfter[T any](s []T, at int64, atOf func(T) int64) int {
	return sort.Search(len(s), func(i int) bool { return atOf(s[i]) > at })
}

// takeTotal removes need from the cluster-wide totals during [t, end), adding end as a
// time at which capacity grows.
func (p *profile) takeTotal(t, end int64, need []int64) {
	if end != never {
		p.addTime(end)
	}
	k, _ := slices.BinarySearch(p.times, t) // t is one of the times
	for ; k < len(p.times) && p.times[k] < end; k++ {
		addTo(p.total[k], need, -1)
	}
}

func covers(have, need []int64) bool {
	for i := range need {
		if have[i] < need[i] {
			return false
		}
	}
	return true
}

// pack assigns each member, largest first, to the node with the least of the lead
// dimension left that fits it, in avail, which it consumes; chosen receives the node
// indexes. It reports whether every member found a node.
func pack(members, avail [][]int64, lead int, chosen []int) bool {
	for mi, m := range members {
		best := -1
		for ni, a := range avail {
			if covers(a, m) && (best < 0 || a[lead] < avail[best][lead]) {
				best = ni
			}
		}
		if best < 0 {
			return false
		}
		addTo(avail[best], m, -1)
		chosen[mi] = best
	}
	return true
}

// availIn writes into dst the capacity the node has free throughout [t, end); cur is
// scratch of the same length.
func (np *nodeProfile) availIn(t, end int64, dst, cur []int64) {
	copy(dst, np.free)
	i := 0
	for ; i < len(np.steps) && np.steps[i].at <= t; i++ {
		addTo(dst, np.steps[i].delta, 1)
	}
	copy(cur, dst)
	for i < len(np.steps) && np.steps[i].at < end {
		// Steps at one instant apply together: a group ending and one starting then
		// do not overlap.
		for at := np.steps[i].at; i < len(np.steps) && np.steps[i].at == at; i++ {
			addTo(cur, np.steps[i].delta, 1)
		}
		for d := range dst {
			dst[d] = min(dst[d], cur[d])
		}
	}
}

func (np *nodeProfile) insert(s step) {
	np.steps = slices.Insert(np.steps, firstAfter(np.steps, s.at, func(x step) int64 { return x.at }), s)
}

// mergeSteps merges the steps of a node, sorted by time, that happen at one instant:
// the members of a group on one node end together.
func mergeSteps(steps []step) []step {
	out := steps[:0]
	for _, st := range steps {
		if n := len(out); n > 0 && out[n-1].at == st.at {
			addTo(out[n-1].delta, st.delta, 1)
			continue
		}
		out = append(out, st)
	}
	return out
}
