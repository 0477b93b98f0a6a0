package placement_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// TestNodesAdmitting: on nodes a-0, a-1 (pool a), b-0 (pool b) and t-0 (pool b, tainted),
// each member gets the nodes its selector, affinity and tolerations admit, nil when
// every node does, and none when no node does; a node set again is read again.
func TestNodesAdmitting(t *testing.T) {
	nodes := []*corev1.Node{
		gt.Node("a-0").GPU(8).Label("pool", "a").Obj(),
		gt.Node("a-1").GPU(8).Label("pool", "a").Obj(),
		gt.Node("b-0").GPU(8).Label("pool", "b").Obj(),
		gt.Node("t-0").GPU(8).Label("pool", "b").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj(),
	}
	snap := cluster.New(nodes, nil)
	member := func(name string, p *corev1.Pod) placement.Member { return placement.Member{Name: name, Pod: p} }
	group := func(members ...placement.Member) placement.Group {
		return placement.Prepare(placement.Group{Name: "g", MinMember: len(members), Members: members})
	}
	for _, tc := range []struct {
		name  string
		group placement.Group
		want  [][]string
	}{
		{"tolerating, no selector: every node", group(member("m", gt.Pod("m").GPU(1).Tolerate("dedicated", "x", corev1.TaintEffectNoSchedule).Obj())), nil},
		{"no toleration: every node but the tainted one", group(member("m", gt.Pod("m").GPU(1).Obj())), [][]string{{"a-0", "a-1", "b-0"}}},
		{"selector of pool a, shared by two workers; a launcher free of it", group(
			member("launcher", gt.Pod("launcher").GPU(1).Obj()),
			member("w-0", gt.Pod("w-0").GPU(1).Selector("pool", "a").Obj()),
			member("w-1", gt.Pod("w-1").GPU(1).Selector("pool", "a").Obj()),
		), [][]string{{"a-0", "a-1", "b-0"}, {"a-0", "a-1"}, {"a-0", "a-1"}}},
		{"affinity to pool b, tolerating", group(member("m", gt.Pod("m").GPU(1).Affinity("pool", corev1.NodeSelectorOpIn, "b").
			Tolerate("dedicated", "x", corev1.TaintEffectNoSchedule).Obj())), [][]string{{"b-0", "t-0"}}},
		{"a pool no node is in", group(member("m", gt.Pod("m").GPU(1).Selector("pool", "c").Obj())), [][]string{{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// cmp tells the nil that stands for every node from none.
			if diff := cmp.Diff(tc.want, placement.NodesAdmitting(snap, tc.group)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
	// The taint is lifted: the untolerating member may use t-0 too.
	snap.SetNode(gt.Node("t-0").GPU(8).Label("pool", "b").Obj())
	if got := placement.NodesAdmitting(snap, group(member("m", gt.Pod("m").GPU(1).Obj()))); got != nil {
		t.Errorf("with no taint left: nodes %v, want nil (every node)", got)
	}
}
