package cluster_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
)

// TestFreeOfFollowsChanges checks every node's free vector (FreeOf, FitsIDs) against its
// Allocatable and Requested maps after random sequences of the changes a snapshot sees,
// on the snapshot and on its copies (Clone, Empty), which share its numbering of
// resources but not its nodes.
func TestFreeOfFollowsChanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := cluster.New(nil, nil)
		copies := []*cluster.Snapshot{}
		var reverts []func()
		pods := map[string]bool{}
		// A resource no node has, numbered before any change: it must stay free nowhere.
		s.ResourceID("example.com/none")
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			target := s
			if len(copies) > 0 && rapid.Bool().Draw(t, "onCopy") {
				target = copies[rapid.IntRange(0, len(copies)-1).Draw(t, "copy")]
			}
			node := fmt.Sprintf("n%d", rapid.IntRange(0, 5).Draw(t, "node"))
			switch rapid.IntRange(0, 7).Draw(t, "op") {
			case 0: // a node appears or changes size; some have no GPU, some a new resource
				b := gt.Node(node).GPU(rapid.Int64Range(0, 8).Draw(t, "gpus")).CPU(fmt.Sprint(rapid.IntRange(1, 16).Draw(t, "cpus")))
				if rapid.Bool().Draw(t, "fpga") {
					b = b.Res("example.com/fpga", "2")
				}
				target.SetNode(b.Obj())
			case 1:
				target.RemoveNode(node)
			case 2:
				name := fmt.Sprintf("p%d", i)
				target.AddPod(gt.Pod(name).GPU(rapid.Int64Range(0, 3).Draw(t, "req")).Req(corev1.ResourceCPU, "500m").Node(node).Obj())
				pods["default/"+name] = true
			case 3:
				for key := range pods {
					target.RemovePod(key)
					delete(pods, key)
					break
				}
			case 4: // an assumption may name a resource nothing named before
				if n := target.Node(node); n != nil {
					name := corev1.ResourceName(fmt.Sprintf("example.com/r%d", rapid.IntRange(0, 2).Draw(t, "res")))
					req := cluster.Resources{gt.GPU: rapid.Int64Range(1, 4).Draw(t, "assume"), name: 1}
					if target == s {
						reverts = append(reverts, s.Assume(n, req))
					} else {
						target.Assume(n, req)
					}
				}
			case 5: // reverts run last in, first out
				if k := len(reverts); k > 0 {
					reverts[k-1]()
					reverts = reverts[:k-1]
				}
			case 6:
				copies = append(copies, s.Clone())
			case 7:
				copies = append(copies, s.Empty())
			}
		}
		for _, c := range append(copies, s) {
			checkFree(t, c)
		}
	})
}

// checkFree compares FreeOf and FitsIDs with Free and Fits on every node of s, for every
// resource a node has or a pod asks for, and one nothing names.
func checkFree(t *rapid.T, s *cluster.Snapshot) {
	for _, n := range s.Nodes() {
		names := map[corev1.ResourceName]bool{"example.com/none": true, "example.com/never": true}
		for name := range n.Allocatable {
			names[name] = true
		}
		for name := range n.Requested {
			names[name] = true
		}
		for name := range names {
			id := s.ResourceID(name)
			if got, want := n.FreeOf(id), n.Free(name); got != want {
				t.Fatalf("node %s: FreeOf(%s) = %d, Free = %d (allocatable %v, requested %v)",
					n.Name(), name, got, want, n.Allocatable, n.Requested)
			}
			req := cluster.Resources{name: 1}
			if got, want := n.FitsIDs([]cluster.ResourceID{id}, []int64{1}), n.Fits(req); got != want {
				t.Fatalf("node %s: FitsIDs(%s) = %d, Fits = %d", n.Name(), name, got, want)
			}
		}
	}
}
