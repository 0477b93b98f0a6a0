package forecast

import "slices"

// Group.From: nodes a member may use only from some time on, as running pods its pod
// anti-affinity repels (or that repel it) are expected to end. Those it may never use
// narrow its nodes (readNodes). The others are a mask of each member's nodes per
// candidate, which pack applies as it does the member's nodes; and their times are
// candidate starts of their own, as the instants at which capacity changes are: a
// group may come to fit at one though no capacity is freed then. What the search keeps
// of the nodes' capacity from one candidate, or group, to the next (refresh, fromKept)
// is capacity alone, which From does not change.

// fromWork is plan's scratch space for Group.From.
type fromWork struct {
	// nodes holds, for each member, the nodes it may use only from a time after now,
	// with those times; empty when no member has any. Members that share their From
	// share their slice.
	nodes [][]fromNode
	// times are those times, sorted, once each.
	times []int64
	// total is the profile's totals with times as instants of their own: the group's
	// candidate starts.
	total levels
	// may holds, at a candidate, the nodes each member may be packed on, nil for any
	// (work.allowed's form); empty when no member has a From time. masks is its backing
	// array.
	may   [][]bool
	masks []bool
}

// fromNode is node ni, which a member may use from at on.
type fromNode struct {
	ni int
	at int64
}

// neverOn reports whether from holds a node its member may never use.
func neverOn(from []NodeFrom) bool {
	return slices.ContainsFunc(from, func(f NodeFrom) bool { return f.At.IsZero() })
}

// fromOf is g's From for member i: nil for none.
func fromOf(g Group, i int) []NodeFrom {
	if i < len(g.From) {
		return g.From[i]
	}
	return nil
}

// sameFrom reports whether a and b are the same slice, as members of one shape share
// theirs.
func sameFrom(a, b []NodeFrom) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// fromRead is one From list as the profile reads it: its nodes with a time after now,
// by index, and those times, sorted, once each.
type fromRead struct {
	nodes []fromNode
	times []int64
}

// readList reads from, once per plan: the groups of a queue that running pods repel
// alike share their From lists, and each lists every node those pods run on.
func (p *profile) readList(from []NodeFrom) *fromRead {
	if len(from) == 0 {
		return &fromRead{}
	}
	key := fromKey{&from[0], len(from)}
	if r, ok := p.fromReads[key]; ok {
		return r
	}
	r := &fromRead{}
	for _, nf := range from {
		at := nf.At.UnixNano()
		if nf.At.IsZero() || at <= p.now {
			continue
		}
		if ni := p.nodeIndex(nf.Node); ni >= 0 {
			r.nodes = append(r.nodes, fromNode{ni: ni, at: at})
			r.times = append(r.times, at)
		}
	}
	slices.Sort(r.times)
	r.times = slices.Compact(r.times)
	if p.fromReads == nil {
		p.fromReads = map[fromKey]*fromRead{}
	}
	p.fromReads[key] = r
	return r
}

// fromKey names a From list by its array and length.
type fromKey struct {
	first *NodeFrom
	n     int
}

// readFrom reads into the scratch space the nodes of the profile each of g's members
// may use only from a time after now, and those times. Those it may never use are its
// nodes' business (readNodes); those from now or before are free to it.
func (p *profile) readFrom(g Group, w *work) {
	f := &w.from
	f.nodes, f.times, f.may = f.nodes[:0], f.times[:0], f.may[:0]
	if g.From == nil {
		return
	}
	var last *fromRead
	for i := range g.Members {
		from := fromOf(g, i)
		if i > 0 && sameFrom(from, fromOf(g, i-1)) {
			f.nodes = append(f.nodes, f.nodes[i-1])
			continue
		}
		r := p.readList(from)
		f.nodes = append(f.nodes, r.nodes)
		if r != last {
			f.times = append(f.times, r.times...)
			last = r
		}
	}
	if len(f.times) == 0 {
		f.nodes = f.nodes[:0]
		return
	}
	slices.Sort(f.times)
	f.times = slices.Compact(f.times)
	f.may = resize(f.may, len(g.Members))
	f.masks = resize(f.masks, len(g.Members)*len(p.nodes))
	// The totals, split at the times: the candidates and what is free in all then.
	f.total = levels{d: p.total.d, at: append(f.total.at[:0], p.total.at...), vals: append(f.total.vals[:0], p.total.vals...)}
	for _, at := range f.times {
		f.total.split(at)
	}
}

// candidates returns the group's candidate starts, and what the nodes have free in all
// from each (flat): the instants at which capacity or its queue's quota changes, and
// its members' From times.
func (s *search) candidates() ([]int64, []int64) {
	if f := &s.w.from; len(f.times) > 0 {
		return f.total.at, f.total.vals
	}
	return s.p.total.at, s.p.total.vals
}

// masksAt sets the nodes each member may be packed on in a window from t (from.may),
// when some member has a From time, and reports whether each member has one.
func (s *search) masksAt(t int64) bool {
	w := s.w
	f := &w.from
	if len(f.nodes) == 0 {
		return true
	}
	n := len(s.p.nodes)
	allowed := func(mi int) []bool {
		if len(w.allowed) > 0 {
			return w.allowed[mi]
		}
		return nil
	}
	for mi, from := range f.nodes {
		base := allowed(mi)
		switch {
		case !slices.ContainsFunc(from, func(x fromNode) bool { return x.at > t }):
			f.may[mi] = base
			continue
		case mi > 0 && len(f.nodes[mi-1]) == len(from) && &from[0] == &f.nodes[mi-1][0] && sameMask(base, allowed(mi-1)):
			f.may[mi] = f.may[mi-1] // the same nodes and From as the member before
			continue
		}
		mask := f.masks[mi*n : (mi+1)*n : (mi+1)*n]
		if base != nil {
			copy(mask, base)
		} else {
			for ni := range mask {
				mask[ni] = true
			}
		}
		for _, x := range from {
			if x.at > t {
				mask[x.ni] = false
			}
		}
		if !slices.Contains(mask, true) {
			return false
		}
		f.may[mi] = mask
	}
	return true
}

// sameMask reports whether a and b are the same mask of nodes, or both nil.
func sameMask(a, b []bool) bool {
	return (a == nil) == (b == nil) && (a == nil || len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]))
}
