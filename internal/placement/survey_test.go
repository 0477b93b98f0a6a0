package placement_test

import (
	"fmt"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// TestSurveysFollowChanges places groups that do not fit, again and again, on one
// snapshot that changes in between (pods bound and gone, assumptions made and reverted,
// nodes resized, tainted, cordoned or added), with capacity held or nodes excluded or not, and compares
// each diagnosis with the one a copy of the snapshot, which keeps no surveys, gives.
func TestSurveysFollowChanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := cluster.New(nil, nil)
		for i := range rapid.IntRange(1, 6).Draw(t, "nodes") {
			s.SetNode(drawSurveyNode(t, fmt.Sprintf("n-%d", i)))
		}
		var reverts []func()
		for i := range rapid.IntRange(1, 20).Draw(t, "steps") {
			node := s.Nodes()[rapid.IntRange(0, s.Len()-1).Draw(t, "node")]
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0:
				s.AddPod(gt.Pod(fmt.Sprintf("p-%d", i)).GPU(rapid.Int64Range(1, 3).Draw(t, "req")).Node(node.Name()).Obj())
			case 1:
				s.RemovePod(fmt.Sprintf("default/p-%d", rapid.IntRange(0, i).Draw(t, "gone")))
			case 2:
				reverts = append(reverts, s.Assume(node, cluster.Resources{gt.GPU: rapid.Int64Range(1, 2).Draw(t, "assume")}))
			case 3:
				if k := len(reverts); k > 0 {
					reverts[k-1]()
					reverts = reverts[:k-1]
				}
			case 4:
				s.SetNode(drawSurveyNode(t, fmt.Sprintf("n-%d", rapid.IntRange(0, s.Len()).Draw(t, "setNode"))))
			}
			g, opts := drawSurveyGroup(t, s)
			_, got := placement.Place(s, g, opts)
			_, want := placement.Place(s.Clone(), g, opts)
			if d := gocmp.Diff(want, got); d != "" {
				t.Fatalf("step %d: diagnosis (-fresh +kept surveys):\n%s", i, d)
			}
		}
	})
}

// drawSurveyNode draws a node that the static predicates may reject.
func drawSurveyNode(t *rapid.T, name string) *corev1.Node {
	b := gt.Node(name).GPU(rapid.Int64Range(0, 4).Draw(t, "gpus")).Label("rack", rapid.SampledFrom([]string{"a", "b"}).Draw(t, "rack"))
	switch rapid.IntRange(0, 5).Draw(t, "state") {
	case 0:
		b = b.Taint("dedicated", "ml", corev1.TaintEffectNoSchedule)
	case 1:
		b = b.Cordon()
	case 2:
		b = b.NotReady()
	}
	return b.Obj()
}

// drawSurveyGroup draws a group too big for the nodes, so that it is diagnosed, with a
// required rack or not, capacity of some node held or not, and some node excluded or not.
func drawSurveyGroup(t *rapid.T, s *cluster.Snapshot) (placement.Group, placement.Options) {
	b := gt.Group("g").Members(rapid.IntRange(1, 3).Draw(t, "members")).GPU(rapid.Int64Range(1, 4).Draw(t, "perMember"))
	if rapid.Bool().Draw(t, "tolerates") {
		b = b.With(func(p *gt.PodBuilder) *gt.PodBuilder {
			return p.Tolerate("dedicated", "ml", corev1.TaintEffectNoSchedule)
		})
	}
	b = b.Plus("big", gt.Pod("big").GPU(9).Obj())
	if rapid.Bool().Draw(t, "rack") {
		b = b.Topology(placement.Topology{Required: "rack", Domain: rapid.SampledFrom([]string{"", "a"}).Draw(t, "domain")})
	}
	var opts placement.Options
	if rapid.Bool().Draw(t, "held") {
		n := s.Nodes()[rapid.IntRange(0, s.Len()-1).Draw(t, "heldNode")]
		opts.Held = map[string]cluster.Resources{n.Name(): {gt.GPU: rapid.Int64Range(1, 4).Draw(t, "heldGPU")}}
	}
	if rapid.Bool().Draw(t, "exclude") {
		name := s.Nodes()[rapid.IntRange(0, s.Len()-1).Draw(t, "excluded")].Name()
		opts.Exclude = func(node string) bool { return node == name }
	}
	return b.Build(), opts
}
