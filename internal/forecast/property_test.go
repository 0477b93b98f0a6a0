package forecast

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The property tests: random queues planned on random profiles, checked against what
// the plan must never do and against plainPlan, the plan without its shortcuts.

// TestPlanNeverOvercommits plans random queues on random profiles and checks, at every
// instant where anything changes, that no node is given more than it has free then,
// and that every group found a start no earlier than now.
func TestPlanNeverOvercommits(t *testing.T) {
	// One planner for every run: what it kept of the last must not show in the next.
	var planner Planner
	rapid.Check(t, func(rt *rapid.T) {
		nNodes := rapid.IntRange(1, 4).Draw(rt, "nodes")
		var nodes []Node
		var releases []Release
		for i := range nNodes {
			name := fmt.Sprintf("n%d", i)
			free := rapid.Int64Range(0, 8).Draw(rt, "free")
			nodes = append(nodes, Node{Name: name, Free: gpus(free)})
			for j := range rapid.IntRange(0, 3).Draw(rt, "releases") {
				releases = append(releases, Release{Node: name, At: at(float64(rapid.IntRange(0, 6).Draw(rt, fmt.Sprint("at", j)))),
					Resources: gpus(rapid.Int64Range(1, 4).Draw(rt, "r"))})
			}
		}
		var groups []Group
		for i := range rapid.IntRange(1, 6).Draw(rt, "groups") {
			groups = append(groups, gang(fmt.Sprintf("g%d", i), rapid.IntRange(1, 3).Draw(rt, "members"),
				rapid.Int64Range(1, 8).Draw(rt, "each"), time.Duration(rapid.IntRange(0, 3).Draw(rt, "hours"))*time.Hour))
		}
		drawNodes(rt, nodes, groups)
		drawApart(rt, groups)
		drawDomains(rt, nodes, groups)
		drawVariants(rt, groups)
		drawFrom(rt, nodes, groups)
		// The groups are in queue q; half the runs give it a quota: what is left now,
		// and what admitted groups give back.
		for i := range groups {
			groups[i].Queue = "q"
			groups[i].Charge = gpus(int64(len(groups[i].Members)) * groups[i].Members[0][gpu])
		}
		var quotas []Quota
		if rapid.Bool().Draw(rt, "quota") {
			q := Quota{Queue: "q", Free: gpus(rapid.Int64Range(0, 12).Draw(rt, "quotaLeft"))}
			for j := range rapid.IntRange(0, 3).Draw(rt, "quotaReleases") {
				q.Releases = append(q.Releases, QuotaRelease{At: at(float64(rapid.IntRange(0, 6).Draw(rt, fmt.Sprint("qat", j)))),
					Resources: gpus(rapid.Int64Range(1, 8).Draw(rt, "qr"))})
			}
			quotas = append(quotas, q)
		}
		if got, want := planner.Plan(t0, nodes, releases, quotas, groups, Options{}), Plan(t0, nodes, releases, quotas, groups, Options{}); !reflect.DeepEqual(got, want) {
			rt.Fatalf("a planner reused plans\n%v\na new one\n%v", got, want)
		}
		p := newProfile(t0, nodes, releases, groups)
		p.addQuotas(quotas)
		ref := newProfile(t0, nodes, releases, groups)
		ref.addQuotas(quotas)
		for _, g := range groups {
			at, planned, why := p.planBest(g, 0)
			if why == "" && at < p.now {
				rt.Fatalf("%s starts at %d, before now", g.Key, at)
			}
			for _, n := range planned {
				if !mayUse(g, n) {
					rt.Fatalf("%s is planned on %s, which none of its members may use (%v)", g.Key, n, g.Nodes)
				}
			}
			if why == "" && g.Domains != nil && !slices.ContainsFunc(g.Domains, func(d []string) bool {
				return !slices.ContainsFunc(planned, func(n string) bool { return !slices.Contains(d, n) })
			}) {
				rt.Fatalf("%s is planned on %v, in none of its domains %v", g.Key, planned, g.Domains)
			}
			if most := largestClass(g); why == "" && len(planned) < most {
				rt.Fatalf("%s is planned on %v, fewer nodes than the %d members of one class (%v)", g.Key, planned, most, g.Apart)
			}
			// The plan's shortcuts (totals, room, nodes kept from one candidate to the
			// next) rule out only candidates a plain search rejects too.
			if want, ok := ref.plainPlanBest(g); ok != (why == "") || ok && want != at {
				rt.Fatalf("%s: planned at %s (%q), a plain search finds %s (%v)", g.Key, time.Duration(at-p.now), why, time.Duration(want-p.now), ok)
			}
		}
		// The cluster-wide totals that rule candidates out are the nodes' sums.
		for k, tk := range p.total.at {
			var sum int64
			for ni := range p.nodes {
				a := make([]int64, 1)
				p.nodes[ni].minIn(tk, tk+1, a)
				sum += a[0]
			}
			if p.total.level(k)[0] != sum {
				rt.Fatalf("at %s: total %d free, the nodes have %d", time.Duration(tk-p.now), p.total.level(k)[0], sum)
			}
		}
		// Every node's free capacity, and what is left of the quota, with every release
		// and every take applied, stays at or above zero throughout.
		profiles := slices.Clone(p.nodes)
		if qp := p.quotas["q"]; qp != nil {
			profiles = append(profiles, qp.left)
		}
		for i, l := range profiles {
			for k, at := range l.at {
				if v := l.level(k)[0]; v < 0 {
					rt.Fatalf("profile %d over-committed from %s: %d free", i, time.Duration(at-p.now), v)
				}
			}
		}
	})
}

// plainPlan is plan without its shortcuts: every candidate time, every node computed
// afresh, the same packing; with commit it takes the capacity.
func (p *profile) plainPlan(g Group, commit bool) (int64, bool) {
	d := len(p.dims)
	members, need := make([]int64, len(g.Members)*d), make([]int64, d)
	var order []int
	for i, m := range g.Members {
		p.read(members[i*d:(i+1)*d], m, 1)
		addTo(need, members[i*d:(i+1)*d], 1)
		order = append(order, i)
	}
	lead := leadOf(p.dims, need)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(members[b*d+lead], members[a*d+lead]) })
	// The nodes each member may use, by index: a mask of its own for every member.
	var allowed [][]bool
	for i := range g.Members {
		if g.Nodes == nil || g.Nodes[i] == nil {
			allowed = append(allowed, nil)
			continue
		}
		mask := make([]bool, len(p.nodes))
		for ni, name := range p.names {
			mask[ni] = slices.Contains(g.Nodes[i], name)
		}
		if !slices.Contains(mask, true) {
			return 0, false
		}
		allowed = append(allowed, mask)
	}
	// The nodes each member may use at t: its own, less those its From holds after t.
	// Each From time after now is a candidate too.
	times := slices.Clone(p.total.at)
	for i := range g.Members {
		for _, f := range fromOf(g, i) {
			if at := f.At.UnixNano(); !f.At.IsZero() && at > p.now {
				times = append(times, at)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	allowedAt := func(t int64) [][]bool {
		if g.From == nil {
			return allowed
		}
		out := make([][]bool, len(g.Members))
		for i := range g.Members {
			mask := make([]bool, len(p.nodes))
			for ni := range mask {
				mask[ni] = allowed[i] == nil || allowed[i][ni]
			}
			for _, f := range fromOf(g, i) {
				if ni := p.nodeIndex(f.Node); ni >= 0 && (f.At.IsZero() || f.At.UnixNano() > t) {
					mask[ni] = false
				}
			}
			out[i] = mask
		}
		return out
	}
	var apart []uint64
	for i := range g.Members {
		if i < len(g.Apart) && g.Apart[i] > 0 {
			apart = append(apart, 1<<(g.Apart[i]-1))
		} else {
			apart = append(apart, 0)
		}
	}
	for _, t := range times {
		end := int64(never)
		if g.Runtime > 0 {
			end = t + int64(g.Runtime)
		}
		qp, charge := p.charge(g)
		if qp != nil && !qp.fitsQuota(charge, t, end, make([]int64, len(charge))) {
			continue
		}
		avail := make([]int64, len(p.nodes)*d)
		for ni := range p.nodes {
			p.nodes[ni].minIn(t, end, avail[ni*d:(ni+1)*d])
		}
		chosen := make([]int, len(order))
		r := &work{allowed: allowedAt(t), apart: apart, classesOn: make([]uint64, len(p.nodes))}
		if !pack(members, order, r, avail, d, lead, chosen) {
			continue
		}
		if !commit {
			return t, true
		}
		for pos, ni := range chosen {
			p.take(ni, t, end, members[order[pos]*d:(order[pos]+1)*d])
		}
		p.total.take(t, end, need)
		qp.takeQuota(charge, t, end)
		return t, true
	}
	return 0, false
}

// drawNodes gives some of groups the nodes their members may use (Group.Nodes): all
// members the same slice, as members of one shape have, or each its own, maybe none of
// the nodes given, or a node that is not among them.
func drawNodes(rt *rapid.T, nodes []Node, groups []Group) {
	subset := func(label string) []string {
		var out []string
		for _, n := range nodes {
			if rapid.Bool().Draw(rt, label) {
				out = append(out, n.Name)
			}
		}
		if rapid.IntRange(0, 4).Draw(rt, label+"Gone") == 0 {
			out = append(out, "gone")
		}
		return out
	}
	for i := range groups {
		switch rapid.IntRange(0, 3).Draw(rt, "constrained") {
		case 1:
			shared := subset("shared")
			groups[i].Nodes = make([][]string, len(groups[i].Members))
			for m := range groups[i].Nodes {
				groups[i].Nodes[m] = shared
			}
		case 2:
			groups[i].Nodes = make([][]string, len(groups[i].Members))
			for m := range groups[i].Nodes {
				if rapid.Bool().Draw(rt, "any") {
					groups[i].Nodes[m] = subset("own")
				}
			}
		}
	}
}

// drawFrom gives some of groups nodes their members may use only from a time on
// (Group.From): all members the same slice, each its own, or one slice several groups
// share; each entry a node, or one
// that is not among them, from a time on the hour or between two (not an instant of
// the profile), now, or never.
func drawFrom(rt *rapid.T, nodes []Node, groups []Group) {
	list := func(label string) []NodeFrom {
		var out []NodeFrom
		for range rapid.IntRange(0, 3).Draw(rt, label) {
			name := "gone"
			if k := rapid.IntRange(0, len(nodes)).Draw(rt, label+"Node"); k < len(nodes) {
				name = nodes[k].Name
			}
			var from time.Time
			if k := rapid.IntRange(-1, 14).Draw(rt, label+"At"); k >= 0 {
				from = at(float64(k) / 2)
			}
			out = append(out, NodeFrom{Node: name, At: from})
		}
		return out
	}
	across := list("acrossFrom") // groups repelled alike share theirs (Planner reads it once)
	for i := range groups {
		switch rapid.IntRange(0, 4).Draw(rt, "from") {
		case 3:
			groups[i].From = make([][]NodeFrom, len(groups[i].Members))
			for m := range groups[i].From {
				groups[i].From[m] = across
			}
		case 1:
			shared := list("sharedFrom")
			groups[i].From = make([][]NodeFrom, len(groups[i].Members))
			for m := range groups[i].From {
				groups[i].From[m] = shared
			}
		case 2:
			groups[i].From = make([][]NodeFrom, len(groups[i].Members))
			for m := range groups[i].From {
				groups[i].From[m] = list("ownFrom")
			}
		}
	}
}

// drawApart gives some of groups classes of members kept apart (Group.Apart).
func drawApart(rt *rapid.T, groups []Group) {
	for i := range groups {
		if !rapid.Bool().Draw(rt, "apart") {
			continue
		}
		groups[i].Apart = make([]int, len(groups[i].Members))
		for m := range groups[i].Apart {
			groups[i].Apart[m] = rapid.IntRange(0, 2).Draw(rt, "class")
		}
	}
}

// largestClass returns how many members of g the largest of its classes kept apart has.
func largestClass(g Group) int {
	count, most := map[int]int{}, 0
	for _, c := range g.Apart {
		if c > 0 {
			count[c]++
			most = max(most, count[c])
		}
	}
	return most
}

// mayUse reports whether some member of g may use node n.
func mayUse(g Group, n string) bool {
	if g.Nodes == nil {
		return true
	}
	for _, names := range g.Nodes {
		if names == nil || slices.Contains(names, n) {
			return true
		}
	}
	return false
}

// TestPlannerReadsNodesOnce plans a run of forecasts on nodes whose releases keep
// their resources under a Gen while their times and Held flags change, and nodes that
// change under a new Gen, and checks that a planner that reuses what it read, and the
// order of the releases, builds the profile and plans each as a new planner does; and
// that a Held release gives nothing back.
func TestPlannerReadsNodesOnce(t *testing.T) {
	// One planner and profile for every run, and Gens that differ across them.
	var planner Planner
	var reused profile
	var next uint64
	newGen := func() uint64 { next++; return next }
	rapid.Check(t, func(rt *rapid.T) {
		nNodes := rapid.IntRange(1, 4).Draw(rt, "nodes")
		gens := make([]uint64, nNodes)
		sizes := make([][]int64, nNodes)
		for i := range nNodes {
			gens[i] = newGen()
			for range rapid.IntRange(0, 3).Draw(rt, "releases") {
				sizes[i] = append(sizes[i], rapid.Int64Range(1, 4).Draw(rt, "r"))
			}
		}
		for round := range rapid.IntRange(1, 4).Draw(rt, "rounds") {
			var nodes []Node
			var releases, kept []Release
			for i := range nNodes {
				if round > 0 && rapid.Bool().Draw(rt, "changed") {
					gens[i] = newGen()
					sizes[i] = append(sizes[i], rapid.Int64Range(1, 4).Draw(rt, "r"))
				}
				name := fmt.Sprintf("n%d", i)
				nodes = append(nodes, Node{Name: name, Free: gpus(8), Used: gpus(int64(len(sizes[i]))), Gen: gens[i]})
				for j, size := range sizes[i] {
					r := Release{Node: name, At: at(float64(rapid.IntRange(0, 6).Draw(rt, fmt.Sprint("at", j)))), Resources: gpus(size),
						Held: rapid.Bool().Draw(rt, "held")}
					releases = append(releases, r)
					if !r.Held {
						kept = append(kept, r)
					}
				}
			}
			var groups []Group
			for i := range rapid.IntRange(1, 4).Draw(rt, "groups") {
				groups = append(groups, gang(fmt.Sprintf("g%d", i), rapid.IntRange(1, 3).Draw(rt, "members"),
					rapid.Int64Range(1, 8).Draw(rt, "each"), time.Duration(rapid.IntRange(0, 3).Draw(rt, "hours"))*time.Hour))
			}
			fresh := slices.Clone(nodes)
			for i := range fresh {
				fresh[i].Gen = 0
			}
			reused.reset(t0, nodes, releases, groups)
			ref := newProfile(t0, fresh, kept, groups)
			if !reflect.DeepEqual(reused.nodes, ref.nodes) || !reflect.DeepEqual(reused.total, ref.total) ||
				!reflect.DeepEqual(reused.events, ref.events) || !slices.Equal(reused.capacity, ref.capacity) {
				rt.Fatalf("round %d: a profile that kept what it read is\n%+v %+v %v\none that reads all\n%+v %+v %v",
					round, reused.nodes, reused.total, reused.events, ref.nodes, ref.total, ref.events)
			}
			got := planner.Plan(t0, nodes, releases, nil, groups, Options{})
			if want := Plan(t0, fresh, kept, nil, groups, Options{}); !reflect.DeepEqual(got, want) {
				rt.Fatalf("round %d: a planner that kept what it read plans\n%v\none that reads all, without the held releases\n%v", round, got, want)
			}
		}
	})
}
