package placement

import (
	"cmp"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
)

// Options adjust one placement.
type Options struct {
	// Exclude, when set, reports nodes this group may not use: capacity reserved for a
	// group that has waited past the starvation threshold.
	Exclude func(node string) bool
	// Held is capacity, by node, that this group may not use: counted as taken while it
	// is placed. A held node without room left for a member is reported as reserved.
	Held map[string]cluster.Resources
}

// Place computes a plan for at least g.MinMember members of g on the snapshot, in one
// decision. On success the plan's assignments are assumed on s (call Plan.Revert to undo
// them). On failure s is exactly as before and the Diagnosis says why.
func Place(s *cluster.Snapshot, g Group, opts Options) (*Plan, *Diagnosis) {
	return place(s, g, opts, true)
}

// Try is Place for a what-if placement whose failure needs no explanation (will the group
// fit on these nodes, or on the empty cluster): it returns Place's plan, or nil without
// a Diagnosis. A diagnosis surveys every node for each shape, which costs more than
// the failed attempt it explains.
func Try(s *cluster.Snapshot, g Group, opts Options) *Plan {
	plan, _ := place(s, g, opts, false)
	return plan
}

// place is Place, diagnosing a failure when diagnosed is set.
func place(s *cluster.Snapshot, g Group, opts Options, diagnosed bool) (*Plan, *Diagnosis) {
	if g.MinMember > len(g.Members) {
		return nil, &Diagnosis{Code: Impossible, Group: g.Name, MinMember: g.MinMember, Members: len(g.Members)}
	}
	set := shapeSetOf(g)
	if set.short != nil {
		t := *set.short
		return nil, &Diagnosis{Code: Impossible, Group: g.Name, MinMember: g.MinMember, Members: len(g.Members), Task: &t}
	}
	if len(opts.Held) > 0 {
		defer hold(s, opts.Held)()
	}
	p := placers.Get().(*placer)
	defer p.release()
	*p = placer{snap: s, g: g, opts: opts, health: checkHealth, scarce: set.scarce, core: set.core, buf: p.buf[:0]}
	p.shapes = set.shapes(s, &p.store)
	p.withPods = s.HasRequiredAntiAffinity() || set.filters
	if p.markDRA() {
		p.withPods = true
	}
	p.scarceID, p.cpuID = s.ResourceID(p.scarce), s.ResourceID(corev1.ResourceCPU)
	if plan := p.place(); plan != nil || !diagnosed {
		return plan, nil
	}
	return nil, p.diagnose()
}

// placers keeps placers between placements: a queue pass places many groups, and a placer
// made for each was the largest allocation of a month's replay. Nothing a placement
// returns points into its placer: a Plan holds its attempt's slices and undos, a
// Diagnosis what it surveyed.
var placers = sync.Pool{New: func() any { return new(placer) }}

// release returns p to placers without what it points to, but for its candidates' array.
func (p *placer) release() {
	*p = placer{buf: p.buf[:0]}
	placers.Put(p)
}

// hold counts held on the snapshot's nodes, and returns its undo.
func hold(s *cluster.Snapshot, held map[string]cluster.Resources) func() {
	var undo []func()
	for name, r := range held {
		if n := s.Node(name); n != nil {
			undo = append(undo, s.Assume(n, r))
		}
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// placer carries one placement attempt.
type placer struct {
	snap   *cluster.Snapshot
	g      Group
	shapes []*shape
	store  shapeStore // shapes' storage
	opts   Options
	health health
	scarce corev1.ResourceName
	// scarceID and cpuID number scarce and cpu in snap and its copies.
	scarceID, cpuID cluster.ResourceID

	best     int    // most members any attempt placed, for the diagnosis
	topology string // why no required domain worked

	// withPods is set when the hosted filters judge some member: assumptions then carry
	// the member's pod, which the filters see for the members after it.
	withPods bool
	// cycles are the hosted filters' cycles of the shapes being filled, and filterErr why
	// the filters could not run, if so.
	cycles    map[*shape]*kubefit.Cycle
	filterErr string
	// next counts, per shape being filled one member at a time, the members placed.
	next map[*shape]int
	// stopped is set once an attempt stopped short of placing every member, and
	// mostPlaced is then the most members such an attempt placed; blocked describes where
	// that attempt stopped when a hosted filter judged the member that fit no node.
	stopped    bool
	mostPlaced int
	blocked    *Blocked

	// core is set when the group's task minimums need some members (see form.core):
	// fill places them first, and an attempt that leaves one unplaced fails; task is
	// then the task short in the attempt that placed the most members so far.
	core   bool
	task   *TaskShortfall
	taskAt int
	// emptyTask is the empty cluster's task short, for an Impossible diagnosis.
	emptyTask *TaskShortfall

	buf     []candidate            // candidates' storage, reused: each list is used up before the next
	oneTier [1][]*cluster.NodeInfo // tiers' storage for one tier
}

// attempt is the outcome of filling some nodes with the group's members.
type attempt struct {
	assignments []Assignment
	unplaced    []string
	undo        []func()
	// broken counts nodes that were whole on the scarce resource before this attempt.
	broken int
	// short is set when a member the task minimums need got no node.
	short bool
}

// enough reports whether a placed what the group needs: at least MinMember members,
// and every member its task minimums need.
func (p *placer) enough(a *attempt) bool {
	return len(a.assignments) >= p.g.MinMember && !a.short
}

func (a *attempt) revert() {
	for i := len(a.undo) - 1; i >= 0; i-- {
		a.undo[i]()
	}
	a.undo = nil
}

// place places the group; when it does not fit and several members have DRA claims, it
// tries again with the shapes in other orders (see otherOrders): a member whose claims
// take any device may, placed first, take the one device another member's claims
// select.
func (p *placer) place() *Plan {
	required, affinity := domainKeys(p.snap, p.g)
	if plan := p.placeInOrder(required, affinity); plan != nil {
		return plan
	}
	first := p.shapes
	defer func() { p.shapes = first }() // the diagnosis surveys the shapes in their order
	for _, order := range p.otherOrders() {
		p.shapes = order
		if plan := p.placeInOrder(required, affinity); plan != nil {
			return plan
		}
	}
	return nil
}

// otherOrders returns the orders place tries the shapes in after their own, when two or
// more of them have DRA claims that differ (their signatures, see Signature): the
// shapes whose claims narrow the most first (kubefit.SelectorCount), then their own
// order reversed; each once, and none that is the first order. Allocation is greedy,
// member by member, as kube-scheduler's is; the orders are a bounded heuristic, not a
// search of every order.
func (p *placer) otherOrders() [][]*shape {
	kinds := map[string]bool{} // the device shapes' signatures: alike claims need no other order
	for _, s := range p.shapes {
		if s.devices {
			kinds[keyOf(s.pod, s.req, true)] = true
		}
	}
	if len(kinds) < 2 {
		return nil
	}
	narrow := map[*shape]int{}
	for _, s := range p.shapes {
		if s.devices {
			narrow[s] = kubefit.SelectorCount(p.snap, s.pod)
		}
	}
	byNarrowing := slices.Clone(p.shapes)
	slices.SortStableFunc(byNarrowing, func(a, b *shape) int { return cmp.Compare(narrow[b], narrow[a]) })
	reversed := slices.Clone(p.shapes)
	slices.Reverse(reversed)
	var out [][]*shape
	for _, order := range [][]*shape{byNarrowing, reversed} {
		if !slices.Equal(order, p.shapes) && !slices.ContainsFunc(out, func(o []*shape) bool { return slices.Equal(o, order) }) {
			out = append(out, order)
		}
	}
	return out
}

// placeInOrder places the group with its shapes in p.shapes' order, within one value of
// each of the keys domainKeys returned, if any.
func (p *placer) placeInOrder(required, affinity string) *Plan {
	if required != "" || affinity != "" {
		return p.placeInDomain(required, affinity)
	}
	a := p.fill(p.tiers(p.snap.Nodes()))
	if !p.enough(a) {
		p.best = max(p.best, len(a.assignments))
		a.revert()
		return nil
	}
	return p.plan(a, "")
}

func (p *placer) plan(a *attempt, domain string) *Plan {
	return &Plan{Group: p.g.Name, Assignments: a.assignments, Unplaced: a.unplaced, Domain: domain, undo: a.undo}
}

// tiers orders nodes for fill: one tier, or with a preferred key the nodes of each of its
// values, the values that can take the most members first.
func (p *placer) tiers(nodes []*cluster.NodeInfo) [][]*cluster.NodeInfo {
	if key := p.g.Topology.Preferred; key != "" {
		return p.preferredTiers(key, nodes)
	}
	p.oneTier[0] = nodes
	return p.oneTier[:]
}

// candidate is a node that can take count more members of the shape being filled, with
// the amounts that rank it (see rank).
type candidate struct {
	node   *cluster.NodeInfo
	count  int
	first  int64
	second int64
}

// fill places each shape's members, in order, on the tiers' nodes, tier by tier, the
// tightest node first within a tier. With task minimums it fills every shape's core
// members first, then the others, and stops at a core member that fits no node. It
// assumes every assignment on the snapshot.
func (p *placer) fill(tiers [][]*cluster.NodeInfo) *attempt {
	a := &attempt{}
	if p.withPods {
		p.next = map[*shape]int{}
	}
	defer func() { p.cycles, p.next = nil, nil }()
	if !p.core {
		for _, s := range p.shapes {
			p.fillPart(a, s, s.members, tiers)
		}
		return a
	}
	for i, s := range p.shapes {
		before := len(a.unplaced)
		p.fillPart(a, s, s.members[:s.core], tiers)
		if len(a.unplaced) > before {
			a.short = true
			p.noteShort(a, s, a.unplaced[before:])
			// The attempt has failed: what it has not filled yet is unplaced.
			for _, m := range s.members[s.core:] {
				a.unplaced = append(a.unplaced, m.Name)
			}
			for _, t := range p.shapes[i+1:] {
				for _, m := range t.members {
					a.unplaced = append(a.unplaced, m.Name)
				}
			}
			return a
		}
	}
	for _, s := range p.shapes {
		p.fillPart(a, s, s.members[s.core:], tiers)
	}
	return a
}

// fillPart places members, a part of s's in their order (what the attempt placed of s
// before comes before them), and lists those that got no node as unplaced.
func (p *placer) fillPart(a *attempt, s *shape, members []Member, tiers [][]*cluster.NodeInfo) {
	if len(members) == 0 {
		return
	}
	var left []Member
	c, begun := p.cycles[s]
	if !begun {
		c = p.begin(s)
	}
	if c != nil {
		left = p.fillEach(a, s, members, tiers)
	} else {
		left = p.fillShape(a, s, members, tiers)
	}
	if len(left) > 0 {
		p.noteBlocked(a, s, tiers)
	}
	for _, m := range left {
		a.unplaced = append(a.unplaced, m.Name)
	}
}

// noteShort records, for the attempt that placed the most members so far, the task of
// the first of s's core members that got no node: unplaced names those that got none.
func (p *placer) noteShort(a *attempt, s *shape, unplaced []string) {
	if p.task != nil && p.taskAt >= len(a.assignments) {
		return
	}
	var task string
	missed := 0
	for _, m := range s.members[:s.core] {
		if !slices.Contains(unplaced, m.Name) {
			continue
		}
		if task == "" {
			task = m.Task
		}
		if m.Task == task {
			missed++
		}
	}
	members := 0
	for _, m := range p.g.Members {
		if m.Task == task {
			members++
		}
	}
	minimum := p.g.TaskMinimums[task]
	p.task = &TaskShortfall{Task: task, Minimum: minimum, Members: members, Placed: minimum - missed}
	p.taskAt = len(a.assignments)
}

// fillShape places s's members on the best candidates, as many on each as it takes.
func (p *placer) fillShape(a *attempt, s *shape, members []Member, tiers [][]*cluster.NodeInfo) []Member {
	left := members
	for _, tier := range tiers {
		if len(left) == 0 {
			break
		}
		for _, c := range p.candidates(tier, s, len(left)) {
			take := min(c.count, len(left))
			for _, m := range left[:take] {
				p.assume(a, c.node, m, s)
			}
			left = left[take:]
			if len(left) == 0 {
				break
			}
		}
	}
	return left
}

// fillEach places s's members one at a time, each on the best candidate with the members
// before it counted: the hosted filters judge s, and a member placed changes their
// verdicts (anti-affinity, spread, ports, volume limits) for the next.
func (p *placer) fillEach(a *attempt, s *shape, members []Member, tiers [][]*cluster.NodeInfo) []Member {
	left := members
next:
	for len(left) > 0 {
		for _, tier := range tiers {
			if cs := p.candidates(tier, s, 1); len(cs) > 0 {
				p.assume(a, cs[0].node, left[0], s)
				left = left[1:]
				continue next
			}
		}
		break
	}
	return left
}

func (p *placer) assume(a *attempt, n *cluster.NodeInfo, m Member, s *shape) {
	as := Assignment{Member: m.Name, Node: n.Name()}
	c := p.cycles[s]
	if p.withPods && m.Pod != nil && c != nil && (s.devices || s.dra != nil) {
		claims, undo, ok := p.reserve(c, m.Pod, n)
		if !ok {
			a.unplaced = append(a.unplaced, m.Name)
			return
		}
		as.Claims = claims
		a.undo = append(a.undo, undo)
	}
	if n.Allocatable[p.scarce] > 0 && n.Requested[p.scarce] == 0 {
		a.broken++
	}
	if p.withPods && m.Pod != nil {
		if c != nil && s.claims {
			// Checked by filterReason for this node: no error here.
			vols, _ := c.Volumes(m.Pod, n)
			as.Provision, as.BindVolumes = vols.Provision, vols.Bind
			if revert, err := c.Assume(m.Pod, n); err == nil {
				a.undo = append(a.undo, revert)
			}
		}
		if p.next != nil {
			p.next[s]++
		}
		a.undo = append(a.undo, p.snap.AssumePod(n, m.Name, m.Pod, s.req))
		if c != nil {
			if err := c.Added(m.Pod, n); err != nil {
				p.cycles[s], p.filterErr = nil, err.Error()
			}
		}
	} else {
		a.undo = append(a.undo, p.snap.Assume(n, s.req))
	}
	a.assignments = append(a.assignments, as)
}

// candidates returns the nodes of tier that pass every predicate for s and have room for at
// least one member, best first (see rank), then by name. The list may stop once its nodes
// can take wanted members (with one member wanted, only the best is returned): callers
// take the candidates in order. The slice is reused by the next call.
func (p *placer) candidates(tier []*cluster.NodeInfo, s *shape, wanted int) []candidate {
	if need := s.req[p.scarce]; need > 0 && len(tier) == p.snap.Len() && !p.byDevices(s) {
		return p.tightest(s, need, wanted)
	}
	if cap(p.buf) < len(tier) && wanted > 1 {
		p.buf = make([]candidate, 0, len(tier))
	}
	out := p.buf[:0]
	for _, n := range tier {
		// Room first: on a busy cluster most nodes are full, and it is the cheaper test.
		k := s.fits(n)
		if k == 0 {
			continue
		}
		if _, bad := p.reject(n, s); bad {
			continue
		}
		c := p.rank(s, candidate{node: n, count: k})
		if wanted == 1 && len(out) == 1 {
			if better(c, out[0]) < 0 {
				out[0] = c
			}
			continue
		}
		out = append(out, c)
	}
	p.buf = out
	// A tier lists its nodes by name, so a stable sort on the amounts alone gives the
	// order of better without comparing names.
	slices.SortStableFunc(out, byAmounts)
	return out
}

// tightest is candidates for a tier of every node and a shape that needs the scarce
// resource, read from the snapshot's index of free amounts: the candidates in order until
// they can take wanted members, without looking at the nodes that come after.
func (p *placer) tightest(s *shape, need int64, wanted int) []candidate {
	out, room := p.buf[:0], 0
	p.snap.ByFree(p.scarce, need, func(n *cluster.NodeInfo) bool {
		k := s.fits(n)
		if k == 0 {
			return true
		}
		if _, bad := p.reject(n, s); bad {
			return true
		}
		out = append(out, candidate{node: n, count: k}) // in order already: no rank needed
		room += k
		return room < wanted
	})
	p.buf = out
	return out
}

// reject applies the caller's exclusions, the static predicates, then the hosted
// filters when s has a cycle of them.
func (p *placer) reject(n *cluster.NodeInfo, s *shape) (NodeReason, bool) {
	if r, bad := p.rejectStatic(n, s); bad {
		return r, true
	}
	return p.filterReason(n, s)
}

// rejectStatic applies the caller's exclusions and the static predicates.
func (p *placer) rejectStatic(n *cluster.NodeInfo, s *shape) (NodeReason, bool) {
	if p.opts.Exclude != nil && p.opts.Exclude(n.Name()) {
		return NodeReason{Kind: Reserved}, true
	}
	if _, held := p.opts.Held[n.Name()]; held && s.fits(n) == 0 {
		return NodeReason{Kind: Reserved}, true
	}
	return staticReason(n, s, p.health)
}

// scarceResource is the resource placement packs on: the extended resource the group asks
// most of in total (nvidia.com/gpu, typically), the first by name among equals, or cpu
// when it asks for none. A resource some form asks for is totalled over every form, once.
func scarceResource(forms []*form) corev1.ResourceName {
	best, bestV := corev1.ResourceCPU, int64(0)
	for i, f := range forms {
		for _, name := range f.names {
			if !cluster.IsExtended(name) || slices.ContainsFunc(forms[:i], func(e *form) bool { return slices.Contains(e.names, name) }) {
				continue // not extended, or totalled already
			}
			var total int64
			for _, g := range forms {
				total += g.req[name] * int64(len(g.members))
			}
			if total > bestV || total == bestV && total > 0 && name < best {
				best, bestV = name, total
			}
		}
	}
	return best
}

// orderForms puts the biggest members first (on the scarce resource, then cpu), the
// classic first-fit-decreasing order, keeping the given order among equals.
func orderForms(forms []*form, scarce corev1.ResourceName) {
	slices.SortStableFunc(forms, func(a, b *form) int {
		if c := cmp.Compare(b.req[scarce], a.req[scarce]); c != 0 {
			return c
		}
		return cmp.Compare(b.req[corev1.ResourceCPU], a.req[corev1.ResourceCPU])
	})
}

func freeOf(nodes []*cluster.NodeInfo, name corev1.ResourceName) int64 {
	var total int64
	for _, n := range nodes {
		total += n.Free(name)
	}
	return total
}
