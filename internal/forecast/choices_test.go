package forecast

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
)

// TestPlanDomains: racks r0 (a, b) and r1 (c, d) of 4 GPUs a node. a and c have all
// free now; b frees its GPUs in 2 hours, d in 1. A gang of two 4-GPU members that
// requires one rack starts in 1 hour on r1, not now on a and c; held to r0 (the rack its
// running members chose), in 2 hours; with no node in any rack, never.
func TestPlanDomains(t *testing.T) {
	nodes := []Node{{Name: "a", Free: gpus(4)}, {Name: "b", Free: gpus(0)}, {Name: "c", Free: gpus(4)}, {Name: "d", Free: gpus(0)}}
	releases := []Release{{Node: "b", At: at(2), Resources: gpus(4)}, {Node: "d", At: at(1), Resources: gpus(4)}}
	racks := [][]string{{"a", "b"}, {"c", "d"}}
	rack, r0, none, spread := gang("rack", 2, 4, time.Hour), gang("r0", 2, 4, time.Hour), gang("none", 1, 1, time.Hour), gang("spread", 2, 4, time.Hour)
	rack.Domains, r0.Domains, none.Domains = racks, racks[:1], [][]string{}
	for name, g := range map[string]Group{"rack": rack, "r0": r0, "none": none, "spread": spread} {
		got := Plan(t0, nodes, releases, nil, []Group{g}, Options{})
		want := map[string]Start{
			"rack":   {Key: "rack", At: at(1), Nodes: []string{"c", "d"}},
			"r0":     {Key: "r0", At: at(2), Nodes: []string{"a", "b"}},
			"none":   {Key: "none", Unknown: "no node has a value of its required topology key"},
			"spread": {Key: "spread", At: at(0), Nodes: []string{"a", "c"}},
		}[name]
		if !reflect.DeepEqual(got[0], want) {
			t.Errorf("%s: %s, want %s", name, render(got), render([]Start{want}))
		}
	}
}

// TestPlanVariants: node a has 1 GPU free now, b frees 4 in 2 hours. A member that
// prefers 4 GPUs and takes 1 otherwise (a claim's alternatives) starts now on a; one
// that asks for 4 only starts on b in 2 hours; neither fits now with 2.
func TestPlanVariants(t *testing.T) {
	nodes := []Node{{Name: "a", Free: gpus(1)}, {Name: "b", Free: gpus(0)}}
	releases := []Release{{Node: "b", At: at(2), Resources: gpus(4)}}
	prefer := gang("prefer", 1, 4, time.Hour)
	prefer.Variants = [][]cluster.Resources{{gpus(2)}, {gpus(1)}}
	only := gang("only", 1, 4, time.Hour)
	for _, tc := range []struct {
		g    Group
		want Start
	}{
		{prefer, Start{Key: "prefer", At: at(0), Nodes: []string{"a"}}},
		{only, Start{Key: "only", At: at(2), Nodes: []string{"b"}}},
	} {
		if got := Plan(t0, nodes, releases, nil, []Group{tc.g}, Options{}); !reflect.DeepEqual(got[0], tc.want) {
			t.Errorf("%s: %s, want %s", tc.g.Key, render(got), render([]Start{tc.want}))
		}
	}
}

// drawVariants gives some groups other lists of their members' requests: one or two,
// each member asking for 1 to 8 GPUs.
func drawVariants(rt *rapid.T, groups []Group) {
	for i := range groups {
		for range rapid.IntRange(0, 2).Draw(rt, "variants") {
			v := make([]cluster.Resources, len(groups[i].Members))
			for m := range v {
				v[m] = gpus(rapid.Int64Range(1, 8).Draw(rt, "variantGPUs"))
			}
			groups[i].Variants = append(groups[i].Variants, v)
		}
	}
}

// drawDomains gives some groups a required topology: the nodes split into up to three
// domains by a drawn value each (some nodes have none), or no domain at all.
func drawDomains(rt *rapid.T, nodes []Node, groups []Group) {
	for i := range groups {
		if !rapid.Bool().Draw(rt, "topology") {
			continue
		}
		byValue := map[int][]string{}
		for _, n := range nodes {
			if v := rapid.IntRange(0, 3).Draw(rt, "domain"); v > 0 {
				byValue[v] = append(byValue[v], n.Name)
			}
		}
		groups[i].Domains = [][]string{}
		for v := 1; v <= 3; v++ {
			if d := byValue[v]; d != nil {
				slices.Sort(d)
				groups[i].Domains = append(groups[i].Domains, d)
			}
		}
	}
}

// plainPlanBest is planBest with plainPlan: each list of requests in each domain tried
// in turn, the earliest start taken, the first on a tie.
func (p *profile) plainPlanBest(g Group) (int64, bool) {
	if g.Domains == nil && g.Variants == nil {
		return p.plainPlan(g, true)
	}
	var tries []Group
	for v := range 1 + len(g.Variants) {
		try := g
		if v > 0 {
			try.Members = g.Variants[v-1]
		}
		try.Variants = nil
		if g.Domains == nil {
			tries = append(tries, try)
		}
		for _, d := range g.Domains {
			tries = append(tries, inDomain(try, d))
		}
	}
	best, bestAt := -1, int64(0)
	for i, try := range tries {
		if at, ok := p.plainPlan(try, false); ok && (best < 0 || at < bestAt) {
			best, bestAt = i, at
		}
	}
	if best < 0 {
		return 0, false
	}
	return p.plainPlan(tries[best], true)
}
