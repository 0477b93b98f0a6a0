package forecast

import (
	"reflect"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
)

// TestPlanFrom: node a has its 8 GPUs free now, but a running job whose pods the members'
// anti-affinity repels holds it for 2 hours; b frees its 8 in 3. A member blocked on a
// until 2 hours starts then on a, not now (no capacity is freed at 2 hours: the time is a
// candidate of its own); blocked on a for ever, on b in 3 hours; on both for ever, never.
// Of two 4-GPU members, one blocked on a, both start on a when it may use it, not in 3
// hours apart.
func TestPlanFrom(t *testing.T) {
	nodes := []Node{{Name: "a", Free: gpus(8)}, {Name: "b", Free: gpus(0)}}
	releases := []Release{{Node: "b", At: at(3), Resources: gpus(8)}}
	withFrom := func(g Group, from ...[]NodeFrom) Group { g.From = from; return g }
	untilTwo := []NodeFrom{{Node: "a", At: at(2)}}
	for _, tc := range []struct {
		g    Group
		want Start
	}{
		{gang("free", 1, 8, time.Hour), Start{Key: "free", At: at(0), Nodes: []string{"a"}}},
		{withFrom(gang("blocked", 1, 8, time.Hour), untilTwo), Start{Key: "blocked", At: at(2), Nodes: []string{"a"}}},
		{withFrom(gang("forever", 1, 8, time.Hour), []NodeFrom{{Node: "a"}}), Start{Key: "forever", At: at(3), Nodes: []string{"b"}}},
		{withFrom(gang("nowhere", 1, 8, time.Hour), []NodeFrom{{Node: "a"}, {Node: "b"}}), Start{Key: "nowhere", Unknown: heldByAntiAffinity}},
		{withFrom(gang("passed", 1, 8, time.Hour), []NodeFrom{{Node: "a", At: t0.Add(-time.Hour)}}), Start{Key: "passed", At: at(0), Nodes: []string{"a"}}},
		{withFrom(gang("one", 2, 4, time.Hour), untilTwo, nil), Start{Key: "one", At: at(2), Nodes: []string{"a"}}},
	} {
		if got := Plan(t0, nodes, releases, nil, []Group{tc.g}, Options{}); !reflect.DeepEqual(got[0], tc.want) {
			t.Errorf("%s: %s, want %s", tc.g.Key, render(got), render([]Start{tc.want}))
		}
	}
}

// TestPlanFromBehindAGroup: a group blocked on a until 2 hours is planned behind one
// that takes a from now for 3 hours: it starts when both let it, in 3 hours; and one
// asking for nothing the nodes count starts only when a member may use a node.
func TestPlanFromBehindAGroup(t *testing.T) {
	nodes := []Node{{Name: "a", Free: gpus(8)}}
	first := gang("first", 1, 8, 3*time.Hour)
	blocked := gang("blocked", 1, 8, time.Hour)
	blocked.From = [][]NodeFrom{{{Node: "a", At: at(2)}}}
	nothing := Group{Key: "nothing", Members: []cluster.Resources{{}}, From: [][]NodeFrom{{{Node: "a", At: at(1)}}}, Runtime: time.Hour}
	got := Plan(t0, nodes, nil, nil, []Group{first, blocked, nothing}, Options{})
	want := []Start{{Key: "first", At: at(0), Nodes: []string{"a"}}, {Key: "blocked", At: at(3), Nodes: []string{"a"}}, {Key: "nothing", At: at(1)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("starts\n%s\nwant\n%s", render(got), render(want))
	}
}
