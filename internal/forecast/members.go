package forecast

import "slices"

// What plan reads of a group's members into its scratch space: their requests, the
// nodes each may be packed on and the classes kept apart.

// readMembers reads g's members into the scratch space, and returns what they need in
// all.
func (p *profile) readMembers(g Group, w *work) []int64 {
	d, n := len(p.dims), len(g.Members)
	w.members = slices.Grow(w.members[:0], n*d)[:n*d]
	clear(w.members)
	clear(w.need)
	w.order = w.order[:0]
	for i, m := range g.Members {
		p.read(w.members[i*d:(i+1)*d], m, 1)
		addTo(w.need, w.members[i*d:(i+1)*d], 1)
		w.order = append(w.order, i)
	}
	w.chosen = slices.Grow(w.chosen[:0], n)[:n]
	return w.need
}

// readNodes reads into the scratch space the nodes each of g's members may be packed
// on, its Nodes less those it may never use by its From, and says why not when some
// member may be packed on none of the profile's nodes.
func (p *profile) readNodes(g Group, w *work) string {
	w.allowed, w.held = w.allowed[:0], nil
	if g.Nodes == nil && !slices.ContainsFunc(g.From, neverOn) {
		return ""
	}
	w.allowed = slices.Grow(w.allowed, len(g.Members))[:len(g.Members)]
	clear(w.allowed)
	for i := range g.Members {
		names, from := nodesOf(g, i), fromOf(g, i)
		if names == nil && !neverOn(from) {
			continue
		}
		if i > 0 && sameSlice(names, nodesOf(g, i-1)) && sameFrom(from, fromOf(g, i-1)) {
			w.allowed[i] = w.allowed[i-1]
			continue
		}
		mask := make([]bool, len(p.nodes))
		for _, name := range names {
			if ni := p.nodeIndex(name); ni >= 0 {
				mask[ni] = true
			}
		}
		if names == nil {
			for ni := range mask {
				mask[ni] = true
			}
		}
		if !slices.Contains(mask, true) {
			return noNode
		}
		for _, f := range from {
			if ni := p.nodeIndex(f.Node); ni >= 0 && f.At.IsZero() {
				mask[ni] = false
			}
		}
		if !slices.Contains(mask, true) {
			return heldByAntiAffinity
		}
		w.allowed[i] = mask
	}
	if slices.ContainsFunc(w.allowed, func(m []bool) bool { return m == nil }) {
		return "" // a member may be packed on any node
	}
	w.held = make([]bool, len(p.nodes))
	for i, mask := range w.allowed {
		if i > 0 && &mask[0] == &w.allowed[i-1][0] {
			continue
		}
		for ni, ok := range mask {
			w.held[ni] = w.held[ni] || ok
		}
	}
	return ""
}

// Why a group has no node to be planned on (readNodes).
const (
	noNode = "no node it may be planned on takes pods: its node selector, node affinity, tolerations, pod affinity, " +
		"the devices its claims select or its volumes admit none of them"
	heldByAntiAffinity = "the nodes it may be planned on are held by running pods its pod anti-affinity selects, " +
		"or whose anti-affinity selects it, with no expected end: pods that are not muster's, of groups with no expected run time, or of its own group"
)

// nodesOf is g's Nodes for member i: nil for any node.
func nodesOf(g Group, i int) []string {
	if i < len(g.Nodes) {
		return g.Nodes[i]
	}
	return nil
}

// readApart reads into the scratch space the class of each of g's members (Group.Apart),
// as a bit; classes beyond the 64th are not kept apart, and their members' forecast is
// an earliest start.
func (p *profile) readApart(g Group, w *work) {
	w.apart = w.apart[:0]
	if g.Apart == nil {
		return
	}
	w.apart = slices.Grow(w.apart, len(g.Members))[:len(g.Members)]
	clear(w.apart)
	for i, class := range g.Apart[:min(len(g.Apart), len(g.Members))] {
		if class > 0 && class <= 64 {
			w.apart[i] = 1 << (class - 1)
		}
	}
	w.classesOn = resize(w.classesOn, len(p.nodes))
}

// sameSlice reports whether a and b are the same slice: the members of one shape share
// theirs.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
