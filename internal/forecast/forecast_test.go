package forecast

import (
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
	// Running pods the gangs' anti-affinity repels keep each gang off 100 nodes, until
	// times over the next 10 hours, one node in ten for ever (Group.From).
	var from []NodeFrom
	for i := range 100 {
		var until time.Time
		if i%10 != 0 {
			until = t0.Add(time.Duration(i*7919%600) * time.Minute)
		}
		from = append(from, NodeFrom{Node: nodes[i*10].Name, At: until})
	}
	repelled := slices.Clone(groups)
	for i := range repelled {
		if i%10 == 0 {
			repelled[i].From = slices.Repeat([][]NodeFrom{from}, len(repelled[i].Members))
		}
	}
	b.Run("from", func(b *testing.B) {
		var pl Planner
		for range b.N {
			pl.Plan(t0, nodes, releases, nil, repelled, Options{Depth: 256, Tries: 512})
		}
	})
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
		drawFrom(rt, nodes, groups)
		p, ref := newProfile(t0, nodes, releases, groups), newProfile(t0, nodes, releases, groups)
		for _, g := range groups {
			at, _, why := p.planBest(g, 0)
			if want, ok := ref.plainPlanBest(g); ok != (why == "") || ok && want != at {
				rt.Fatalf("%s: planned at %s (%q), a plain search finds %s (%v)", g.Key, time.Duration(at-p.now), why, time.Duration(want-p.now), ok)
			}
		}
	})
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
		{Key: "nowhere", Unknown: "no node it may be planned on takes pods: its node selector, node affinity, tolerations, pod affinity, the devices its claims select or its volumes admit none of them"},
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
