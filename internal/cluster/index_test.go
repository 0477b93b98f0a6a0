package cluster_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
)

// TestByFreeFollowsChanges checks ByFree against a sort of every node, after random
// sequences of the changes a snapshot sees: nodes added, resized and removed, pods bound
// and gone, assumptions made and reverted.
func TestByFreeFollowsChanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := cluster.New(nil, nil)
		// Index from the start, or only after the changes: both must agree with a scan.
		early := rapid.Bool().Draw(t, "early")
		if early {
			s.ByFree(gt.GPU, 1, func(*cluster.NodeInfo) bool { return true })
		}
		var reverts []func()
		pods := map[string]bool{}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := range steps {
			node := fmt.Sprintf("n%d", rapid.IntRange(0, 7).Draw(t, "node"))
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0: // a node appears or changes size; some have no GPU at all
				s.SetNode(gt.Node(node).GPU(rapid.Int64Range(0, 8).Draw(t, "gpus")).Obj())
			case 1:
				s.RemoveNode(node)
			case 2:
				name := fmt.Sprintf("p%d", i)
				s.AddPod(gt.Pod(name).GPU(rapid.Int64Range(0, 3).Draw(t, "req")).Node(node).Obj())
				pods["default/"+name] = true
			case 3:
				for key := range pods {
					s.RemovePod(key)
					delete(pods, key)
					break
				}
			case 4:
				if n := s.Node(node); n != nil {
					req := cluster.Resources{gt.GPU: rapid.Int64Range(1, 4).Draw(t, "assume")}
					reverts = append(reverts, s.Assume(n, req))
				}
			case 5: // reverts run last in, first out
				if k := len(reverts); k > 0 {
					reverts[k-1]()
					reverts = reverts[:k-1]
				}
			}
		}
		atLeast := rapid.Int64Range(1, 4).Draw(t, "atLeast")
		var got, want []string
		s.ByFree(gt.GPU, atLeast, func(n *cluster.NodeInfo) bool {
			got = append(got, n.Name())
			return true
		})
		nodes := slices.Clone(s.Nodes())
		nodes = slices.DeleteFunc(nodes, func(n *cluster.NodeInfo) bool {
			return n.Allocatable[gt.GPU] <= 0 || n.Free(gt.GPU) < atLeast
		})
		slices.SortStableFunc(nodes, func(a, b *cluster.NodeInfo) int { return cmp.Compare(a.Free(gt.GPU), b.Free(gt.GPU)) })
		for _, n := range nodes {
			want = append(want, n.Name())
		}
		if d := gocmp.Diff(want, got); d != "" {
			t.Fatalf("ByFree(%s, %d) (-scan +index):\n%s", gt.GPU, atLeast, d)
		}
	})
}

func TestByFreeStops(t *testing.T) {
	s := cluster.New([]*corev1.Node{gt.Node("a").GPU(8).Obj(), gt.Node("b").GPU(2).Obj(), gt.Node("c").GPU(2).Obj()}, nil)
	var seen []string
	s.ByFree(gt.GPU, 2, func(n *cluster.NodeInfo) bool {
		seen = append(seen, n.Name())
		return len(seen) < 2
	})
	if d := gocmp.Diff([]string{"b", "c"}, seen); d != "" {
		t.Fatalf("ByFree visited (-want +got):\n%s", d)
	}
}

// BenchmarkAssumeIndexed assumes a one-GPU member on each node of a 128-node snapshot
// indexed by free GPUs and cpu, and reverts it, as placement does for a what-if.
func BenchmarkAssumeIndexed(b *testing.B) {
	nodes := gt.Nodes("n", 128, func(nb *gt.NodeBuilder) *gt.NodeBuilder { return nb.GPU(8).CPU("64") })
	s := cluster.New(nodes, nil)
	for _, name := range []corev1.ResourceName{gt.GPU, corev1.ResourceCPU} {
		s.ByFree(name, 1, func(*cluster.NodeInfo) bool { return true })
	}
	req := cluster.Resources{gt.GPU: 1, corev1.ResourceCPU: 4000, corev1.ResourcePods: 1}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range s.Nodes() {
			s.Assume(n, req)()
		}
	}
}
