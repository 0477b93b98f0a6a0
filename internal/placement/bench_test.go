package placement_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

func eightGPUNodes(n int) []*corev1.Node {
	return gt.Nodes("n", n, func(b *gt.NodeBuilder) *gt.NodeBuilder {
		return b.GPU(8).Label("rack", fmt.Sprint(len(b.Obj().Name)%16))
	})
}

// BenchmarkBigGang decides one 1,000-member one-GPU gang on 5,000 eight-GPU nodes, from a
// fresh snapshot each time (the decision, not the snapshot build, is timed).
func BenchmarkBigGang(b *testing.B) {
	nodes := eightGPUNodes(5000)
	g := gt.Group("big").Members(1000).GPU(1).Build()
	snap := cluster.New(nodes, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		plan, diag := placement.Place(snap, g, placement.Options{})
		if diag != nil {
			b.Fatal(diag)
		}
		plan.Revert()
	}
}

// BenchmarkGangsBackToBack admits 500 gangs of 8 one-GPU members on 1,000 eight-GPU nodes,
// one after another on one snapshot, as an admission pass does.
func BenchmarkGangsBackToBack(b *testing.B) {
	nodes := eightGPUNodes(1000)
	groups := make([]placement.Group, 500)
	for i := range groups {
		groups[i] = gt.Group(fmt.Sprintf("g%d", i)).Members(8).GPU(1).Build()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		snap := cluster.New(nodes, nil)
		for _, g := range groups {
			if _, diag := placement.Place(snap, g, placement.Options{}); diag != nil {
				b.Fatal(diag)
			}
		}
	}
}

// BenchmarkOnePerNodeGangsBackToBack is BenchmarkGangsBackToBack with one-per-node
// required anti-affinity in each gang: every member is judged by kube-scheduler's hosted
// filters, one at a time. Run both in one invocation to read the cost of the rule as
// their ratio.
func BenchmarkOnePerNodeGangsBackToBack(b *testing.B) {
	nodes := eightGPUNodes(1000)
	groups := make([]placement.Group, 500)
	for i := range groups {
		job := fmt.Sprintf("g%d", i)
		groups[i] = gang(job, 8, onePerNode(job))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		snap := cluster.New(nodes, nil)
		for _, g := range groups {
			plan, diag := placement.Place(snap, g, placement.Options{})
			if diag != nil {
				b.Fatal(diag)
			}
			if len(nodesOf(plan)) != 8 {
				b.Fatalf("gang %s on %v", g.Name, nodesOf(plan))
			}
		}
	}
}
