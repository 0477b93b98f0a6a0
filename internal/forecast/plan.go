package forecast

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// work is plan's scratch space, sized for the profile's nodes and dimensions and
// reused from one group to the next: a forecast plans dozens of groups on the same
// nodes.
type work struct {
	// avail holds, flat, what each node has free throughout the candidate window;
	// packing what is left of it as the members are packed.
	avail, packing []int64
	// roomOf counts the copies of the smallest member each node has room for in the
	// lead dimension; dirty marks the nodes in touched, to be computed again.
	roomOf  []int
	dirty   []bool
	touched []int
	// members holds the group's members' requests, flat; order are their indexes,
	// largest first in the lead dimension, and chosen the node of each in that order.
	members       []int64
	order, chosen []int
	need          []int64
	// allowed holds, for each member, the nodes it may be packed on by index, or nil
	// when it may be packed on any (Group.Nodes); it is empty when every member may.
	// held marks the nodes some member may be packed on, nil when any may be.
	allowed [][]bool
	held    []bool
	// from holds the nodes members may use only from some time on (Group.From).
	from fromWork
	// apart holds, for each member, the bit of its class in Group.Apart (zero for none),
	// and classesOn, while packing, the classes of the members packed on each node.
	apart     []uint64
	classesOn []uint64
	// kept is the window avail and roomOf were last brought to, which the next group
	// starts from if it packs by the same lead dimension and smallest member; taken are
	// the nodes planned on since.
	kept  keptWindow
	taken []int
	// instants and heldNodes are a dry run's scratch (search.readHeld).
	instants  []int64
	heldNodes []int
}

// keptWindow is a window avail and roomOf hold, for a lead dimension and a smallest
// member, with the room it left; the zero keptWindow holds none.
type keptWindow struct {
	valid    bool
	lead     int
	smallest int64
	t, end   int64
	room     int
}

func (p *profile) scratchSpace() *work {
	w := &p.work
	if n, d := len(p.nodes), len(p.dims); len(w.avail) != n*d || len(w.roomOf) != n || len(w.need) != d {
		*w = work{avail: make([]int64, n*d), packing: make([]int64, n*d), roomOf: make([]int, n), dirty: make([]bool, n),
			need: make([]int64, d)}
	}
	return w
}

// leadOf is the dimension members are packed by: the first one need asks for, or the
// first extended resource it asks for (the accelerator, which is what is scarce).
func leadOf(dims []corev1.ResourceName, need []int64) int {
	lead := 0
	for i := range need {
		if need[i] > 0 && (need[lead] == 0 || cluster.IsExtended(dims[i]) && !cluster.IsExtended(dims[lead])) {
			lead = i
		}
	}
	return lead
}

// plan finds the earliest candidate time at which g's members fit for its run time,
// takes their capacity in the profile, and returns that time and the nodes they are
// planned on; or why none was found. A dry run (dry not nil) takes nothing and lists no
// node.
func (p *profile) plan(g Group, tries int, dry *dryRun) (int64, []string, string) {
	w := p.scratchSpace()
	need := p.readMembers(g, w)
	for i := range need {
		if need[i] > p.capacity[i] {
			return 0, nil, fmt.Sprintf("only %s of the %s %s its members ask for are free or expected to be freed: "+
				"groups with no expected run time, or pods that are not muster's, hold the rest",
				cluster.Format(p.dims[i], p.capacity[i]), cluster.Format(p.dims[i], need[i]), p.dims[i])
		}
	}
	p.readApart(g, w)
	if why := p.readNodes(g, w); why != "" {
		return 0, nil, why
	}
	p.readFrom(g, w)
	qp, charge := p.charge(g)
	if why := qp.beyondPeak(charge); why != "" {
		return 0, nil, why
	}
	s := search{p: p, w: w, runtime: int64(g.Runtime), qp: qp, charge: charge, dry: dry}
	if qp != nil {
		s.quotaLeft = make([]int64, len(qp.dims))
	}
	if !slices.ContainsFunc(need, func(v int64) bool { return v > 0 }) {
		// It asks for nothing the profile's nodes count (devices by claim, say): only
		// its queue's quota can hold it back.
		return s.quotaOnly()
	}
	// Larger members first, each on the node it fits most tightly (best fit by the
	// lead dimension), as placement packs.
	d := len(p.dims)
	s.lead = leadOf(p.dims, need)
	slices.SortStableFunc(w.order, func(a, b int) int { return cmp.Compare(w.members[b*d+s.lead], w.members[a*d+s.lead]) })
	s.smallest = w.members[w.order[len(w.order)-1]*d+s.lead]
	return s.run(tries)
}

// search is one group's search for its earliest start, with what is kept from one
// candidate to the next.
type search struct {
	p       *profile
	w       *work
	runtime int64
	// dry, when not nil, makes the search a dry run, which takes nothing; one of a group
	// held to some nodes, heldNodes, tries only instants (readHeld), and brings only
	// those nodes to each window (refreshHeld).
	dry       *dryRun
	instants  []int64
	heldNodes []int
	qp        *quotaProfile
	// charge is the group's charge in its queue's quota; quotaLeft scratch for what is
	// left of the quota in a window.
	charge, quotaLeft []int64
	lead              int
	smallest          int64
	// Each node's capacity free throughout the window is kept from one candidate to
	// the next, and computed again only for the nodes with an instant the window moved
	// over; room counts the copies of the smallest member they have room for in the
	// lead dimension, which rules most candidates out before the members are packed.
	room int
	// roomHeld is room on the nodes the group is held to (work.held), when it is.
	roomHeld int
	computed bool
	lastEnd  int64
	// fromT and fromEnd are the events after t and after end-1: both only move
	// forward, and the events do not change until the group is planned.
	fromT, fromEnd int
}

// endOf is the end of the group's window from t.
func (s *search) endOf(t int64) int64 {
	if s.runtime > 0 {
		return t + s.runtime
	}
	return never
}

// quotaOnly plans a group that asks for nothing the nodes count at the first time its
// queue's quota has room for it.
func (s *search) quotaOnly() (int64, []string, string) {
	times, _ := s.candidates()
	for _, t := range times {
		end := s.endOf(t)
		if !s.masksAt(t) {
			continue // a member may use no node yet (Group.From)
		}
		if s.qp.fitsQuota(s.charge, t, end, s.quotaLeft) {
			if s.dry == nil {
				s.qp.takeQuota(s.charge, t, end)
			}
			return t, nil, ""
		}
	}
	return 0, nil, "it does not fit the quota expected to be left: groups ahead of it, or groups running with no expected run time, hold it"
}

// run tries the candidate times in order, and plans the group at the first its members
// fit.
func (s *search) run(tries int) (int64, []string, string) {
	w, d, lead := s.w, len(s.p.dims), s.lead
	times, total := s.candidates()
	need := w.need
	// A candidate whose window [t, end) holds a time at which the nodes have less than
	// need of the lead dimension in all is ruled out, whatever the nodes, and so is
	// every later candidate up to that time: clear is the first time index, from i on,
	// not known to leave enough in all. Each index is compared once.
	tried, clear := 0, 0
	if s.dry != nil && w.held != nil {
		s.instants = s.readHeld()
	}
	next := 0 // the first of instants not passed
	for i := 0; i < len(times); i++ {
		t := times[i]
		if s.dry != nil && s.dry.before != 0 && t >= s.dry.before {
			return 0, nil, laterThanBest
		}
		if s.instants != nil {
			for next < len(s.instants) && s.instants[next] < t {
				next++
			}
			if next == len(s.instants) {
				break // no instant left at which it could come to fit
			}
			if s.instants[next] != t {
				j, _ := slices.BinarySearch(times[i:], s.instants[next])
				i += j - 1 // and on to the instant
				continue
			}
		}
		end := s.endOf(t)
		clear = max(clear, i)
		for clear < len(times) && times[clear] < end && total[clear*d+lead] >= need[lead] {
			clear++
		}
		if clear < len(times) && times[clear] < end {
			i = clear // and on past it
			continue
		}
		if !s.qp.fitsQuota(s.charge, t, end, s.quotaLeft) {
			continue // its queue's quota is not enough then, whatever the nodes
		}
		// A group held to some nodes tries only the times at which they have room for
		// its members: the times at which only other nodes free up, which may be most
		// of the cluster's, would use up its tries.
		if w.held != nil {
			s.refresh(t, end)
			if s.smallest > 0 && s.roomHeld < len(w.order) {
				continue
			}
		}
		if tries > 0 && tried == tries {
			return 0, nil, fmt.Sprintf("it fits none of the next %d times enough capacity is expected to be free in all", tries)
		}
		tried++
		if w.held == nil {
			s.refresh(t, end)
			if s.smallest > 0 && s.room < len(w.order) {
				continue
			}
		}
		if !s.masksAt(t) {
			continue // a member may use no node yet (Group.From)
		}
		copy(w.packing, w.avail)
		if !pack(w.members, w.order, w, w.packing, d, lead, w.chosen) {
			continue
		}
		if s.dry != nil {
			return t, nil, ""
		}
		return t, s.take(t, end), ""
	}
	if s.qp != nil {
		return 0, nil, "it does not fit the capacity and quota expected to be free: groups ahead of it, or groups running with no expected run time, hold them"
	}
	return 0, nil, "it does not fit the capacity expected to be free: groups ahead of it, or groups running with no expected run time, hold it"
}

// refresh brings avail and room to the window [t, end): every node on the first
// candidate, then only the nodes with an instant the window moved over.
func (s *search) refresh(t, end int64) {
	p, w := s.p, s.w
	if s.instants != nil {
		s.refreshHeld(t, end)
		return
	}
	if !s.computed {
		if !s.fromKept(t, end) {
			s.room = 0
			for ni := range p.nodes {
				s.refreshNode(ni, t, end)
				s.room += w.roomOf[ni]
			}
		}
		w.taken = w.taken[:0]
		s.computed = true
		s.fromT, s.fromEnd = p.firstEvent(t), p.firstEvent(end-1)
		if w.held != nil {
			s.roomHeld = 0
			for ni, ok := range w.held {
				if ok {
					s.roomHeld += w.roomOf[ni]
				}
			}
		}
	} else {
		touched := w.touched[:0]
		touched, s.fromT = p.stepsUpTo(s.fromT, t, touched, w.dirty)
		if s.lastEnd != never {
			touched, s.fromEnd = p.stepsUpTo(s.fromEnd, end-1, touched, w.dirty)
		}
		s.refreshTouched(touched, t, end)
	}
	s.lastEnd = end
	w.kept = keptWindow{valid: true, lead: s.lead, smallest: s.smallest, t: t, end: end, room: s.room}
}

// refreshHeld brings the nodes a dry run's group is held to, and roomHeld, to the window
// [t, end): all of them at every candidate, since they are few (one domain's) and the
// candidates are their own instants. The other nodes are left as they were, so the next
// group cannot start from this window.
func (s *search) refreshHeld(t, end int64) {
	w := s.w
	s.roomHeld = 0
	for _, ni := range s.heldNodes {
		s.refreshNode(ni, t, end)
		s.roomHeld += w.roomOf[ni]
	}
	w.kept.valid = false
}

// readHeld lists the nodes the group is held to in heldNodes, and returns, sorted, now
// and the instants at which the capacity of one of them, or its queue's quota, changes:
// a window's least capacity grows only as its start passes such an instant, so a group
// that does not fit at one of them does not fit before the next.
func (s *search) readHeld() []int64 {
	p, w := s.p, s.w
	out := append(w.instants[:0], p.now)
	s.heldNodes = w.heldNodes[:0]
	for ni, ok := range w.held {
		if ok {
			s.heldNodes = append(s.heldNodes, ni)
			out = append(out, p.nodes[ni].at...)
		}
	}
	w.instants, w.heldNodes = out, s.heldNodes // kept for the next dry run
	if s.qp != nil {
		out = append(out, s.qp.left.at...)
		w.instants = out
	}
	// A member comes to be allowed a node at its From times.
	out = append(out, w.from.times...)
	w.instants = out
	slices.Sort(out)
	return slices.Compact(out)
}

// fromKept brings avail and room to the window [t, end) from the window the last
// group's search left them at, and reports whether it could: the groups of a queue
// are much alike, and a node keeps what it has free throughout unless it has an instant
// the window moved over or was planned on since. It cannot when the last group packed
// by another lead dimension or smallest member, or when the windows are far enough
// apart that computing every node is cheaper.
func (s *search) fromKept(t, end int64) bool {
	p, w, k := s.p, s.w, s.w.kept
	if !k.valid || k.lead != s.lead || k.smallest != s.smallest || s.smallest <= 0 {
		return false
	}
	// The events at which the window's start moved, (min, max] of the two starts, and
	// those its end moved over, the same of the two ends less one.
	a0, a1 := p.firstEvent(min(k.t, t)), p.firstEvent(max(k.t, t))
	b0, b1 := 0, 0
	if k.end != never || end != never {
		b0, b1 = p.firstEvent(min(k.end, end)-1), p.firstEvent(max(k.end, end)-1)
	}
	if a1-a0+b1-b0+len(w.taken) > len(p.nodes) {
		return false
	}
	touched := w.touched[:0]
	mark := func(ni int) {
		if !w.dirty[ni] {
			w.dirty[ni] = true
			touched = append(touched, ni)
		}
	}
	for _, ni := range w.taken {
		mark(ni)
	}
	for _, r := range [][2]int{{a0, a1}, {b0, b1}} {
		for _, e := range p.events[r[0]:r[1]] {
			mark(e.node)
		}
	}
	s.room = k.room
	s.refreshTouched(touched, t, end)
	return true
}

// refreshTouched brings the touched nodes, marked in dirty, to the window [t, end),
// unmarks them, and keeps room's count of them current, and roomHeld's once it was
// counted; touched is kept as scratch.
func (s *search) refreshTouched(touched []int, t, end int64) {
	w := s.w
	for _, ni := range touched {
		w.dirty[ni] = false
		before := w.roomOf[ni]
		s.refreshNode(ni, t, end)
		s.room += w.roomOf[ni] - before
		if w.held != nil && w.held[ni] {
			s.roomHeld += w.roomOf[ni] - before
		}
	}
	w.touched = touched
}

// refreshNode brings node ni's avail and roomOf to the window [t, end).
func (s *search) refreshNode(ni int, t, end int64) {
	d, l := len(s.p.dims), &s.p.nodes[ni]
	avail := s.w.avail[ni*d : (ni+1)*d]
	k := l.index(t)
	if v := l.vals[k*d+s.lead]; v < s.smallest && !s.p.overcommitted[ni] {
		// Short of the smallest member at t, it has room for none in the window, and
		// fits no member; its least in the window, between zero and v, does not matter.
		// Most nodes are full at most candidates: this spares the window's levels. The
		// node stays short as long as it has no instant the window moves over.
		avail[s.lead], s.w.roomOf[ni] = v, 0
		return
	}
	l.minFrom(k, end, avail)
	if s.smallest > 0 {
		s.w.roomOf[ni] = int(avail[s.lead] / s.smallest)
	}
}

// take takes the packed members' capacity during [t, end) on their nodes, in the
// totals and in the queue's quota, and returns the nodes, sorted.
func (s *search) take(t, end int64) []string {
	p, w, d := s.p, s.w, len(s.p.dims)
	nodes := make([]string, 0, len(w.chosen))
	for pos, ni := range w.chosen {
		m := w.order[pos]
		p.take(ni, t, end, w.members[m*d:(m+1)*d])
		nodes = append(nodes, p.names[ni])
	}
	w.taken = append(w.taken, w.chosen...)
	p.total.take(t, end, w.need)
	s.qp.takeQuota(s.charge, t, end)
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// firstEvent is the index of the first event after at.
func (p *profile) firstEvent(at int64) int {
	return sort.Search(len(p.events), func(i int) bool { return p.events[i].at > at })
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

// take removes r from node ni's free capacity during [t, end), with an event for each
// instant it adds to the node.
func (p *profile) take(ni int, t, end int64, r []int64) {
	newT, newEnd := p.nodes[ni].take(t, end, r)
	if newT {
		p.addEvent(event{at: t, node: ni})
	}
	if newEnd {
		p.addEvent(event{at: end, node: ni})
	}
}

func (p *profile) addEvent(e event) {
	p.events = slices.Insert(p.events, p.firstEvent(e.at), e)
}

func covers(have, need []int64) bool {
	for i := range need {
		if have[i] < need[i] {
			return false
		}
	}
	return true
}

// pack assigns each member, in order, to the node with the least of the lead
// dimension left that fits it, among those allowed it and holding no member of its
// class (work.allowed, or work.from's masks at the candidate, and work.apart; r may be
// nil), in avail (flat, d per node), which it consumes; chosen receives the node
// indexes. It reports whether every member found
// a node.
func pack(members []int64, order []int, r *work, avail []int64, d, lead int, chosen []int) bool {
	n := len(avail) / d // d > 0: the group asks for some of the profile's dimensions
	var allowed [][]bool
	var apart []uint64
	if r != nil {
		allowed, apart = r.allowed, r.apart
		if len(r.from.may) > 0 {
			allowed = r.from.may // the nodes each may use at the candidate (Group.From)
		}
		if len(apart) > 0 {
			clear(r.classesOn)
		}
	}
	for pos, mi := range order {
		m := members[mi*d : (mi+1)*d]
		var may []bool
		if len(allowed) > 0 {
			may = allowed[mi]
		}
		var class uint64
		if len(apart) > 0 {
			class = apart[mi]
		}
		best := -1
		for ni := range n {
			a := avail[ni*d : (ni+1)*d]
			if (may == nil || may[ni]) && (class == 0 || r.classesOn[ni]&class == 0) && covers(a, m) &&
				(best < 0 || a[lead] < avail[best*d+lead]) {
				best = ni
			}
		}
		if best < 0 {
			return false
		}
		addTo(avail[best*d:(best+1)*d], m, -1)
		if class != 0 {
			r.classesOn[best] |= class
		}
		chosen[pos] = best
	}
	return true
}
