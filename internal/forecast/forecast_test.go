package forecast

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
)

const gpu = "nvidia.com/gpu"

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func gpus(n int64) cluster.Resources { return cluster.Resources{gpu: n} }

func gang(key string, members int, each int64, runtime time.Duration) Group {
	g := Group{Key: key, Runtime: runtime}
	for range members {
		g.Members = append(g.Members, gpus(each))
	}
	return g
}

func at(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }

func render(starts []Start) string {
	var b strings.Builder
	for _, s := range starts {
		if s.At.IsZero() {
			fmt.Fprintf(&b, "%s unknown: %s\n", s.Key, s.Unknown)
			continue
		}
		fmt.Fprintf(&b, "%s %s\n", s.Key, s.At.Sub(t0))
	}
	return b.String()
}

func TestPlan(t *testing.T) {
	two := []Node{{Name: "a", Free: gpus(0)}, {Name: "b", Free: gpus(0)}}
	released := []Release{
		{Node: "a", At: at(1), Resources: gpus(8)},
		{Node: "b", At: at(3), Resources: gpus(8)},
	}
	for _, tc := range []struct {
		name     string
		nodes    []Node
		releases []Release
		groups   []Group
		opts     Options
		want     string
	}{{
		name:   "fits now",
		nodes:  []Node{{Name: "a", Free: gpus(8)}},
		groups: []Group{gang("g", 2, 4, time.Hour)},
		want:   "g 0s\n",
	}, {
		// The gang waits for both nodes; a job that ends before it backfills node a;
		// one that would not end in time waits for the gang to end.
		name: "conservative backfill", nodes: two, releases: released,
		groups: []Group{gang("big", 2, 8, 2*time.Hour), gang("short", 1, 8, time.Hour), gang("long", 1, 8, 3*time.Hour)},
		want:   "big 3h0m0s\nshort 1h0m0s\nlong 5h0m0s\n",
	}, {
		name: "a group with no run time holds its nodes for ever", nodes: two, releases: released,
		groups: []Group{gang("forever", 1, 8, 0), gang("next", 2, 8, time.Hour), gang("small", 1, 8, time.Hour)},
		want: "forever 1h0m0s\n" +
			"next unknown: it does not fit the capacity expected to be free: groups ahead of it, or groups running with no expected run time, hold it\n" +
			"small 3h0m0s\n",
	}, {
		name: "capacity that never comes back", nodes: []Node{{Name: "a", Free: gpus(2)}},
		groups: []Group{gang("g", 1, 4, time.Hour)},
		want:   "g unknown: only 2 of the 4 nvidia.com/gpu its members ask for are free or expected to be freed: groups with no expected run time, or pods that are not muster's, hold the rest\n",
	}, {
		name: "depth", nodes: []Node{{Name: "a", Free: gpus(8)}},
		groups: []Group{gang("g1", 1, 1, time.Hour), gang("g2", 1, 1, time.Hour)}, opts: Options{Depth: 1},
		want: "g1 0s\ng2 unknown: muster forecasts the first 1 groups in order, and it comes after them\n",
	}, {
		// Enough is free in all at each of three times, never on one node.
		name: "tries", nodes: []Node{{Name: "a", Free: gpus(4)}, {Name: "b", Free: gpus(4)}},
		releases: []Release{{Node: "a", At: at(1), Resources: gpus(2)}, {Node: "b", At: at(2), Resources: gpus(2)}},
		groups:   []Group{gang("big", 1, 8, time.Hour)}, opts: Options{Tries: 2},
		want: "big unknown: it fits none of the next 2 times enough capacity is expected to be free in all\n",
	}, {
		// Members of 8 do not fit two nodes of 4 free each, though 8 are free in all.
		name:   "members are packed on nodes, not counted in all",
		nodes:  []Node{{Name: "a", Free: gpus(4)}, {Name: "b", Free: gpus(4)}},
		groups: []Group{gang("g", 1, 8, time.Hour)},
		want:   "g unknown: it does not fit the capacity expected to be free: groups ahead of it, or groups running with no expected run time, hold it\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(Plan(t0, tc.nodes, tc.releases, nil, tc.groups, tc.opts)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

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

// BenchmarkPlan forecasts 256 queued groups, one in ten a gang of 8 × 8 GPUs, the rest
// of one GPU, on 1,000 nodes of 8 GPUs full of one-GPU pods that end over the next
// 10 hours.
func BenchmarkPlan(b *testing.B) {
	var nodes []Node
	var releases []Release
	for i := range 1000 {
		name := fmt.Sprintf("n%04d", i)
		nodes = append(nodes, Node{Name: name, Free: gpus(0)})
		for j := range 8 {
			releases = append(releases, Release{Node: name, At: t0.Add(time.Duration((i*8+j)*7919%600) * time.Minute), Resources: gpus(1)})
		}
	}
	var groups []Group
	for i := range 256 {
		if i%10 == 0 {
			groups = append(groups, gang(fmt.Sprintf("gang%d", i), 8, 8, 2*time.Hour))
		} else {
			groups = append(groups, gang(fmt.Sprintf("one%d", i), 1, 1, time.Duration(1+i%5)*time.Hour))
		}
	}
	b.Run("new", func(b *testing.B) {
		for range b.N {
			Plan(t0, nodes, releases, nil, groups, Options{Depth: 256, Tries: 512})
		}
	})
	// A Planner kept from one forecast to the next, as the engine keeps one.
	b.Run("kept", func(b *testing.B) {
		var pl Planner
		for range b.N {
			pl.Plan(t0, nodes, releases, nil, groups, Options{Depth: 256, Tries: 512})
		}
	})
	// The gangs require one rack of the 125 racks of 8 nodes each.
	var racks [][]string
	for r := range 125 {
		var rack []string
		for i := range 8 {
			rack = append(rack, nodes[r*8+i].Name)
		}
		racks = append(racks, rack)
	}
	inRacks := slices.Clone(groups)
	for i := range inRacks {
		if i%10 == 0 {
			inRacks[i].Domains = racks
		}
	}
	b.Run("racks", func(b *testing.B) {
		var pl Planner
		for range b.N {
			pl.Plan(t0, nodes, releases, nil, inRacks, Options{Depth: 256, Tries: 512})
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
	var apart []uint64
	for i := range g.Members {
		if i < len(g.Apart) && g.Apart[i] > 0 {
			apart = append(apart, 1<<(g.Apart[i]-1))
		} else {
			apart = append(apart, 0)
		}
	}
	for _, t := range p.total.at {
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
		r := &work{allowed: allowed, apart: apart, classesOn: make([]uint64, len(p.nodes))}
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

// TestPlanQuota: a queue whose quota of 4 GPUs is all held until an admitted group ends
// in 2 hours starts its queued groups then, though the cluster has room now: two of 2
// GPUs at 2 h, a third when the first of them ends, and a group of another queue at once.
func TestPlanQuota(t *testing.T) {
	nodes := []Node{{Name: "a", Free: gpus(8)}, {Name: "b", Free: gpus(8)}}
	quotas := []Quota{{Queue: "q", Free: gpus(0), Releases: []QuotaRelease{{At: at(2), Resources: gpus(4)}}}}
	inQ := func(g Group) Group { g.Queue, g.Charge = "q", gpus(int64(len(g.Members))*g.Members[0][gpu]); return g }
	groups := []Group{inQ(gang("q1", 1, 2, time.Hour)), inQ(gang("q2", 1, 2, 3*time.Hour)), inQ(gang("q3", 1, 2, time.Hour)),
		gang("other", 1, 2, time.Hour), inQ(gang("huge", 1, 6, time.Hour))}
	got := Plan(t0, nodes, nil, quotas, groups, Options{})
	want := []time.Time{at(2), at(2), at(3), t0, {}}
	for i, s := range got {
		if !s.At.Equal(want[i]) {
			t.Errorf("%s: expected at %v (%q), want %v", s.Key, s.At.Sub(t0), s.Unknown, want[i].Sub(t0))
		}
	}
	if why := got[4].Unknown; !strings.Contains(why, "only 4 of queue q's quota of nvidia.com/gpu") {
		t.Errorf("huge: unknown because %q, want the quota named", why)
	}
}

// TestPlanNodes: a group is planned on the nodes that free first, not the ones with the
// most free now: node a has half its GPUs free now but the rest for 10 hours; b and c
// free all theirs in an hour.
func TestPlanNodes(t *testing.T) {
	nodes := []Node{{Name: "a", Free: gpus(4)}, {Name: "b", Free: gpus(0)}, {Name: "c", Free: gpus(0)}}
	releases := []Release{
		{Node: "a", At: at(10), Resources: gpus(4)},
		{Node: "b", At: at(1), Resources: gpus(8)},
		{Node: "c", At: at(1), Resources: gpus(8)},
	}
	got := Plan(t0, nodes, releases, nil, []Group{gang("g", 2, 8, time.Hour)}, Options{})
	if got[0].At != at(1) || !slices.Equal(got[0].Nodes, []string{"b", "c"}) {
		t.Errorf("planned at %s on %v, want 1h0m0s on [b c]", got[0].At.Sub(t0), got[0].Nodes)
	}
}

// TestPlanFromTheLastGroupsWindow plans queues of groups alike, whose searches start
// from the window the last one left the nodes at (fromKept), and checks each start
// against a plain search.
func TestPlanFromTheLastGroupsWindow(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var nodes []Node
		var releases []Release
		for i := range rapid.IntRange(1, 6).Draw(rt, "nodes") {
			name := fmt.Sprintf("n%d", i)
			nodes = append(nodes, Node{Name: name, Free: gpus(rapid.Int64Range(0, 4).Draw(rt, "free"))})
			for j := range rapid.IntRange(0, 4).Draw(rt, "releases") {
				releases = append(releases, Release{Node: name, At: at(float64(rapid.IntRange(0, 12).Draw(rt, fmt.Sprint("at", j)))),
					Resources: gpus(rapid.Int64Range(1, 4).Draw(rt, "r"))})
			}
		}
		each := rapid.Int64Range(1, 2).Draw(rt, "each")
		var groups []Group
		// Groups that end leave dips in the nodes' capacity, which the window's end
		// moves over.
		for i := range rapid.IntRange(2, 24).Draw(rt, "groups") {
			groups = append(groups, gang(fmt.Sprintf("g%d", i), rapid.IntRange(1, 2).Draw(rt, "members"), each,
				time.Duration(rapid.IntRange(1, 8).Draw(rt, "hours"))*time.Hour))
		}
		drawNodes(rt, nodes, groups)
		drawApart(rt, groups)
		drawDomains(rt, nodes, groups)
		drawVariants(rt, groups)
		p, ref := newProfile(t0, nodes, releases, groups), newProfile(t0, nodes, releases, groups)
		for _, g := range groups {
			at, _, why := p.planBest(g, 0)
			if want, ok := ref.plainPlanBest(g); ok != (why == "") || ok && want != at {
				rt.Fatalf("%s: planned at %s (%q), a plain search finds %s (%v)", g.Key, time.Duration(at-p.now), why, time.Duration(want-p.now), ok)
			}
		}
	})
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

// TestPlanPools: nodes a and b are one pool, free in 3 hours, c another, free now. A
// group held to the first pool is expected to start in 3 hours on a and b, one of two
// shapes (a launcher free to go anywhere, workers held to the pool) when the first
// ends, though c has room for all its members now; a group held to no node that takes
// pods is unknown, and one held to none starts on c at once.
func TestPlanPools(t *testing.T) {
	nodes := []Node{{Name: "a", Free: gpus(0)}, {Name: "b", Free: gpus(0)}, {Name: "c", Free: gpus(8)}}
	releases := []Release{{Node: "a", At: at(3), Resources: gpus(8)}, {Node: "b", At: at(3), Resources: gpus(8)}}
	pool := []string{"a", "b"}
	held := gang("held", 2, 8, time.Hour)
	held.Nodes = [][]string{pool, pool}
	mixed := Group{Key: "mixed", Members: []cluster.Resources{gpus(1), gpus(3), gpus(3)}, Nodes: [][]string{nil, pool, pool}, Runtime: time.Hour}
	nowhere := gang("nowhere", 1, 1, time.Hour)
	nowhere.Nodes = [][]string{{"cordoned"}}
	free := gang("free", 1, 8, time.Hour)
	got := Plan(t0, nodes, releases, nil, []Group{held, mixed, nowhere, free}, Options{})
	want := []Start{
		{Key: "held", At: at(3), Nodes: []string{"a", "b"}},
		{Key: "mixed", At: at(4), Nodes: []string{"a"}},
		{Key: "nowhere", Unknown: "no node it may be planned on takes pods: its node selector, node affinity, tolerations, the devices its claims select or its volumes admit none of them"},
		{Key: "free", At: at(0), Nodes: []string{"c"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("starts\n%s\nwant\n%s", render(got), render(want))
	}
}

// TestPlanPoolFreeLate: 1,000 full nodes of 8 GPUs whose pods end one by one over the
// next 10 hours, the first ten of them a pool that frees all at once in 9 hours. A gang
// of 10 × 8 GPUs held to the pool starts in 9 hours: the times at which only other
// nodes free up, thousands of them before, do not use up its tries.
func TestPlanPoolFreeLate(t *testing.T) {
	var nodes []Node
	var releases []Release
	var pool []string
	for i := range 1000 {
		name := fmt.Sprintf("n%04d", i)
		nodes = append(nodes, Node{Name: name, Free: gpus(0)})
		if i < 10 {
			pool = append(pool, name)
			releases = append(releases, Release{Node: name, At: at(9), Resources: gpus(8)})
			continue
		}
		for j := range 8 {
			releases = append(releases, Release{Node: name, At: t0.Add(time.Duration((i*8+j)*7919%600) * time.Minute), Resources: gpus(1)})
		}
	}
	g := gang("pooled", 10, 8, time.Hour)
	g.Nodes = slices.Repeat([][]string{pool}, 10)
	got := Plan(t0, nodes, releases, nil, []Group{g}, Options{Depth: 256, Tries: 512})
	if got[0].At != at(9) || len(got[0].Nodes) != 10 {
		t.Errorf("pooled: planned at %v on %d nodes (%q), want at 9h0m0s on the pool's 10", got[0].At.Sub(t0), len(got[0].Nodes), got[0].Unknown)
	}
}

// TestPlanApart: node a has 8 GPUs free now, b frees its 8 in 2 hours. Two one-GPU
// members kept apart (one per node) start in 2 hours on a and b; the same members not
// kept apart start now, both on a.
func TestPlanApart(t *testing.T) {
	nodes := []Node{{Name: "a", Free: gpus(8)}, {Name: "b", Free: gpus(0)}}
	releases := []Release{{Node: "b", At: at(2), Resources: gpus(8)}}
	apart, together := gang("apart", 2, 1, time.Hour), gang("together", 2, 1, time.Hour)
	apart.Apart = []int{1, 1}
	got := Plan(t0, nodes, releases, nil, []Group{apart, together}, Options{})
	want := []Start{{Key: "apart", At: at(2), Nodes: []string{"a", "b"}}, {Key: "together", At: at(0), Nodes: []string{"a"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("starts\n%s\nwant\n%s", render(got), render(want))
	}
}
