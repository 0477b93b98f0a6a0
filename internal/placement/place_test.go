package placement_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

func gpuNodes(prefix string, count int, gpus int64) []*corev1.Node {
	return gt.Nodes(prefix, count, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(gpus) })
}

func single(pod *corev1.Pod) placement.Group {
	return placement.Group{Name: "g", MinMember: 1, Members: []placement.Member{{Name: pod.Name, Pod: pod}}}
}

// TestPredicates checks each per-pod predicate on a one-node cluster: the pod either gets
// the node or is refused with kube-scheduler's reason.
func TestPredicates(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	tests := []struct {
		name  string
		node  *corev1.Node
		bound []*corev1.Pod
		pod   *corev1.Pod
		want  string // "" = placed; otherwise a substring of the diagnosis
	}{
		{"extended resource fits", gt.Node("n").GPU(4).Obj(), nil, gt.Pod("p").GPU(4).Obj(), ""},
		{"extended resource short", gt.Node("n").GPU(4).Obj(), []*corev1.Pod{gt.Pod("x").GPU(2).Node("n").Obj()}, gt.Pod("p").GPU(4).Obj(), "0/1 nodes are available: 1 Insufficient nvidia.com/gpu"},
		{"init container dominates", gt.Node("n").CPU("4").Obj(), nil, gt.Pod("p").Req(corev1.ResourceCPU, "1").Init(cpu("5")).Obj(), "needs 5 cpu on one node; largest eligible node has 4"},
		{"init container within", gt.Node("n").CPU("4").Obj(), nil, gt.Pod("p").Req(corev1.ResourceCPU, "1").Init(cpu("4")).Obj(), ""},
		{"overhead counts", gt.Node("n").CPU("4").Obj(), nil, gt.Pod("p").Req(corev1.ResourceCPU, "4").Overhead(cpu("250m")).Obj(), "needs 4250m cpu on one node"},
		{"nodeSelector matches", gt.Node("n").Label("pool", "a100").Obj(), nil, gt.Pod("p").Selector("pool", "a100").Obj(), ""},
		{"nodeSelector mismatch", gt.Node("n").Label("pool", "t4").Obj(), nil, gt.Pod("p").Selector("pool", "a100").Obj(), "1 node(s) didn't match Pod's node affinity/selector"},
		{"affinity In", gt.Node("n").Label("gpu", "a100").Obj(), nil, gt.Pod("p").Affinity("gpu", corev1.NodeSelectorOpIn, "a100", "h100").Obj(), ""},
		{"affinity NotIn", gt.Node("n").Label("gpu", "a100").Obj(), nil, gt.Pod("p").Affinity("gpu", corev1.NodeSelectorOpNotIn, "a100").Obj(), "didn't match"},
		{"affinity Exists", gt.Node("n").Label("gpu", "a100").Obj(), nil, gt.Pod("p").Affinity("gpu", corev1.NodeSelectorOpExists).Obj(), ""},
		{"affinity DoesNotExist", gt.Node("n").Label("gpu", "a100").Obj(), nil, gt.Pod("p").Affinity("gpu", corev1.NodeSelectorOpDoesNotExist).Obj(), "didn't match"},
		{"affinity Gt", gt.Node("n").Label("mem-gb", "80").Obj(), nil, gt.Pod("p").Affinity("mem-gb", corev1.NodeSelectorOpGt, "40").Obj(), ""},
		{"affinity Lt", gt.Node("n").Label("mem-gb", "80").Obj(), nil, gt.Pod("p").Affinity("mem-gb", corev1.NodeSelectorOpLt, "40").Obj(), "didn't match"},
		{"NoSchedule taint", gt.Node("n").Taint("gpu", "a100", corev1.TaintEffectNoSchedule).Obj(), nil, gt.Pod("p").Obj(), "1 node(s) had untolerated taint {gpu: a100}"},
		{"NoExecute taint", gt.Node("n").Taint("maint", "", corev1.TaintEffectNoExecute).Obj(), nil, gt.Pod("p").Obj(), "untolerated taint {maint}"},
		{"tolerated taint", gt.Node("n").Taint("gpu", "a100", corev1.TaintEffectNoSchedule).Obj(), nil, gt.Pod("p").Tolerate("gpu", "a100", corev1.TaintEffectNoSchedule).Obj(), ""},
		{"PreferNoSchedule is soft", gt.Node("n").Taint("gpu", "a100", corev1.TaintEffectPreferNoSchedule).Obj(), nil, gt.Pod("p").Obj(), ""},
		{"cordoned", gt.Node("n").Cordon().Obj(), nil, gt.Pod("p").Obj(), "1 node(s) were unschedulable"},
		{"cordon tolerated", gt.Node("n").Cordon().Obj(), nil, gt.Pod("p").Tolerate(corev1.TaintNodeUnschedulable, "", corev1.TaintEffectNoSchedule).Obj(), ""},
		{"not ready", gt.Node("n").NotReady().Obj(), nil, gt.Pod("p").Obj(), "1 node(s) were not ready"},
		{"init container busy", gt.Node("n").CPU("4").Obj(), []*corev1.Pod{gt.Pod("x").Req(corev1.ResourceCPU, "1").Node("n").Obj()}, gt.Pod("p").Req(corev1.ResourceCPU, "1").Init(cpu("4")).Obj(), "1 Insufficient cpu"},
		{"pod count", gt.Node("n").Pods(1).Obj(), []*corev1.Pod{gt.Pod("x").Node("n").Obj()}, gt.Pod("p").Obj(), "1 Too many pods"},
		{"terminal pods free capacity", gt.Node("n").GPU(1).Obj(), []*corev1.Pod{succeeded(gt.Pod("x").GPU(1).Node("n").Obj())}, gt.Pod("p").GPU(1).Obj(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := cluster.New([]*corev1.Node{tc.node}, tc.bound)
			plan, diag := placement.Place(snap, single(tc.pod), placement.Options{})
			if tc.want == "" {
				if diag != nil {
					t.Fatalf("want placed, got %v", diag)
				}
				return
			}
			if plan != nil {
				t.Fatalf("want refused (%q), got plan %+v", tc.want, plan.Assignments)
			}
			if !strings.Contains(diag.String(), tc.want) {
				t.Fatalf("diagnosis %q does not contain %q", diag, tc.want)
			}
		})
	}
}

func succeeded(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodSucceeded; return p }

// TestAllOrNothing: a group that does not fit whole leaves the snapshot exactly as it was,
// and one that fits is assumed whole.
func TestAllOrNothing(t *testing.T) {
	nodes := gpuNodes("n", 8, 1)
	bound := []*corev1.Pod{gt.Pod("other-0").GPU(1).Node("n-3").Obj()}
	snap := cluster.New(nodes, bound)
	before := snap.Usage()

	plan, diag := placement.Place(snap, gt.Group("big").Members(8).GPU(1).Build(), placement.Options{})
	if plan != nil {
		t.Fatalf("8 members on 7 free GPUs: want no plan, got %d assignments", len(plan.Assignments))
	}
	if diag.Code != placement.Unschedulable {
		t.Fatalf("code = %s, want Unschedulable: %v", diag.Code, diag)
	}
	if d := cmp.Diff(before, snap.Usage()); d != "" {
		t.Fatalf("snapshot changed by a failed placement (-before +after):\n%s", d)
	}

	plan, diag = placement.Place(snap, gt.Group("fits").Members(7).GPU(1).Build(), placement.Options{})
	if diag != nil {
		t.Fatalf("7 members on 7 free GPUs: %v", diag)
	}
	if got := len(plan.Assignments); got != 7 {
		t.Fatalf("assignments = %d, want 7", got)
	}
	for _, n := range snap.Nodes() {
		if n.Free(gt.GPU) != 0 {
			t.Errorf("node %s has %d GPU free after a plan that should fill it", n.Name(), n.Free(gt.GPU))
		}
	}
	plan.Revert()
	if d := cmp.Diff(before, snap.Usage()); d != "" {
		t.Fatalf("Revert did not restore the snapshot (-before +after):\n%s", d)
	}
}

// TestEmptyVerdictFollowsTheNodes: what placement remembers of a group fitting the empty
// cluster holds only while the nodes stay: once a node is removed or shrinks, the same
// group is found Impossible, not Unschedulable.
func TestEmptyVerdictFollowsTheNodes(t *testing.T) {
	for _, change := range []struct {
		name  string
		apply func(*cluster.Snapshot)
	}{
		{"node removed", func(s *cluster.Snapshot) { s.RemoveNode("n-1") }},
		{"node shrinks", func(s *cluster.Snapshot) { s.SetNode(gt.Node("n-1").GPU(4).Obj()) }},
	} {
		t.Run(change.name, func(t *testing.T) {
			snap := cluster.New(gpuNodes("n", 2, 8), []*corev1.Pod{gt.Pod("other-0").GPU(8).Node("n-0").Obj()})
			g := gt.Group("big").Members(2).GPU(8).Build()
			if _, diag := placement.Place(snap, g, placement.Options{}); diag == nil || diag.Code != placement.Unschedulable {
				t.Fatalf("2 × 8 GPUs with one of two 8-GPU nodes busy: diagnosis %v, want Unschedulable", diag)
			}
			change.apply(snap)
			if _, diag := placement.Place(snap, g, placement.Options{}); diag == nil || diag.Code != placement.Impossible {
				t.Fatalf("2 × 8 GPUs once the cluster cannot hold them: diagnosis %v, want Impossible", diag)
			}
		})
	}
}

// TestMinMemberBelowMembers: an elastic group is placed when at least minMember fit; the
// rest are listed as unplaced.
func TestMinMemberBelowMembers(t *testing.T) {
	snap := cluster.New(gpuNodes("n", 4, 1), nil)
	plan, diag := placement.Place(snap, gt.Group("e").Members(6).Min(4).GPU(1).Build(), placement.Options{})
	if diag != nil {
		t.Fatal(diag)
	}
	if len(plan.Assignments) != 4 || len(plan.Unplaced) != 2 {
		t.Fatalf("assignments %d, unplaced %d; want 4 and 2", len(plan.Assignments), len(plan.Unplaced))
	}
}

func TestImpossibleVersusUnschedulable(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*corev1.Node
		bound []*corev1.Pod
		group placement.Group
		code  placement.Code
		want  string
	}{
		{
			name:  "one pod larger than any node",
			nodes: gpuNodes("n", 8, 4),
			group: gt.Group("big").Members(1).GPU(8).Build(),
			code:  placement.Impossible,
			want:  "big-worker-0 needs 8 nvidia.com/gpu on one node; largest eligible node has 4",
		},
		{
			name:  "largest counts only eligible nodes",
			nodes: append(gpuNodes("small", 2, 4), gt.Node("big").GPU(8).Taint("gpu", "h100", corev1.TaintEffectNoSchedule).Obj()),
			group: gt.Group("big").Members(1).GPU(8).Build(),
			code:  placement.Impossible,
			want:  "needs 8 nvidia.com/gpu on one node; largest eligible node has 4",
		},
		{
			name: "no eligible node at all",
			nodes: append(gt.Nodes("t", 4, func(b *gt.NodeBuilder) *gt.NodeBuilder {
				return b.GPU(1).Label("pool", "gpu").Taint("gpu", "a100", corev1.TaintEffectNoSchedule)
			}), gt.Nodes("s", 4, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1).Label("pool", "cpu") })...),
			group: gt.Group("g").Members(1).GPU(1).With(func(p *gt.PodBuilder) *gt.PodBuilder { return p.Selector("pool", "gpu") }).Build(),
			code:  placement.Impossible,
			want:  "g-worker-0 {nvidia.com/gpu: 1}: 0/8 nodes are eligible: 4 node(s) didn't match Pod's node affinity/selector, 4 node(s) had untolerated taint {gpu: a100}",
		},
		{
			name:  "group larger than the whole cluster",
			nodes: gpuNodes("n", 8, 1),
			group: gt.Group("g").Members(10).GPU(1).Build(),
			code:  placement.Impossible,
			want:  "group needs 10 members on one placement; the whole cluster, empty, can take 8",
		},
		{
			name:  "minMember larger than members",
			nodes: gpuNodes("n", 8, 1),
			group: gt.Group("g").Members(2).Min(3).GPU(1).Build(),
			code:  placement.Impossible,
			want:  "minMember 3 is larger than the group's 2 members",
		},
		{
			name: "busy now, fits when empty",
			nodes: append(gpuNodes("n", 4, 1), gt.Nodes("t", 4, func(b *gt.NodeBuilder) *gt.NodeBuilder {
				return b.GPU(1).Taint("gpu", "a100", corev1.TaintEffectNoSchedule)
			})...),
			bound: []*corev1.Pod{gt.Pod("x0").GPU(1).Node("n-0").Obj(), gt.Pod("x1").GPU(1).Node("n-1").Obj()},
			group: gt.Group("g").Members(4).GPU(1).Build(),
			code:  placement.Unschedulable,
			want:  "2 of minMember 4 members can be placed now; g-worker-0 ×4 {nvidia.com/gpu: 1}: 2/8 nodes are available: 4 node(s) had untolerated taint {gpu: a100}, 2 Insufficient nvidia.com/gpu",
		},
		{
			name:  "not-ready nodes are not impossible",
			nodes: gt.Nodes("n", 2, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1).NotReady() }),
			group: gt.Group("g").Members(2).GPU(1).Build(),
			code:  placement.Unschedulable,
			want:  "0/2 nodes are available: 2 node(s) were not ready",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, diag := placement.Place(cluster.New(tc.nodes, tc.bound), tc.group, placement.Options{})
			if plan != nil {
				t.Fatalf("want no plan, got %+v", plan.Assignments)
			}
			if diag.Code != tc.code {
				t.Errorf("code = %s, want %s (%v)", diag.Code, tc.code, diag)
			}
			if !strings.Contains(diag.String(), tc.want) {
				t.Errorf("diagnosis\n  %s\ndoes not contain\n  %s", diag, tc.want)
			}
		})
	}
}

func TestTopology(t *testing.T) {
	rack := func(r string) func(*gt.NodeBuilder) *gt.NodeBuilder {
		return func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(8).Label("rack", r) }
	}
	nodes := append(append(gt.Nodes("a", 2, rack("a")), gt.Nodes("b", 4, rack("b"))...), gt.Nodes("c", 3, rack("c"))...)

	t.Run("required keeps one domain", func(t *testing.T) {
		snap := cluster.New(nodes, nil)
		g := gt.Group("g").Members(3).GPU(8).Topology(placement.Topology{Required: "rack"}).Build()
		plan, diag := placement.Place(snap, g, placement.Options{})
		if diag != nil {
			t.Fatal(diag)
		}
		// Rack c fits exactly: it breaks as many whole nodes as b would, with less left over.
		if plan.Domain != "c" {
			t.Fatalf("domain = %q, want c (the tightest rack); plan %+v", plan.Domain, plan.Assignments)
		}
		for _, a := range plan.Assignments {
			if !strings.HasPrefix(a.Node, "c-") {
				t.Errorf("member %s on %s, outside rack c", a.Member, a.Node)
			}
		}
	})
	t.Run("required fails when no rack is big enough", func(t *testing.T) {
		snap := cluster.New(nodes, nil)
		g := gt.Group("g").Members(5).GPU(8).Topology(placement.Topology{Required: "rack"}).Build()
		_, diag := placement.Place(snap, g, placement.Options{})
		if diag == nil || diag.Code != placement.Impossible {
			t.Fatalf("want Impossible, got %v", diag)
		}
		if want := "no value of rack among 3 can take 5 members (the best takes 4)"; !strings.Contains(diag.String(), want) {
			t.Fatalf("diagnosis %q does not contain %q", diag, want)
		}
	})
	t.Run("preferred uses fewest domains", func(t *testing.T) {
		snap := cluster.New(nodes, nil)
		g := gt.Group("g").Members(6).GPU(8).Topology(placement.Topology{Preferred: "rack"}).Build()
		plan, diag := placement.Place(snap, g, placement.Options{})
		if diag != nil {
			t.Fatal(diag)
		}
		racks := map[string]int{}
		for _, a := range plan.Assignments {
			racks[a.Node[:1]]++
		}
		if len(racks) != 2 || racks["b"] != 4 {
			t.Fatalf("racks used %v, want all of b and one other", racks)
		}
	})
	t.Run("required and preferred: one zone, fewest racks in it", func(t *testing.T) {
		// Zone east fits the group tighter, but only across its two racks; zone west
		// fits it in one rack. (Before, a preferred key with a required one was ignored.)
		at := func(zone, rack string) func(*gt.NodeBuilder) *gt.NodeBuilder {
			return func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(8).Label("zone", zone).Label("rack", rack) }
		}
		nodes := slices.Concat(gt.Nodes("e1", 2, at("east", "e1")), gt.Nodes("e2", 2, at("east", "e2")),
			gt.Nodes("w1", 4, at("west", "w1")), gt.Nodes("w2", 1, at("west", "w2")))
		g := gt.Group("g").Members(4).GPU(8).Topology(placement.Topology{Required: "zone", Preferred: "rack"}).Build()
		plan, diag := placement.Place(cluster.New(nodes, nil), g, placement.Options{})
		if diag != nil {
			t.Fatal(diag)
		}
		if plan.Domain != "west" {
			t.Fatalf("domain = %q, want west (one rack); plan %+v", plan.Domain, plan.Assignments)
		}
		for _, a := range plan.Assignments {
			if !strings.HasPrefix(a.Node, "w1-") {
				t.Errorf("member %s on %s, outside rack w1", a.Member, a.Node)
			}
		}
		// With no zone that fits it in one rack, the fewest racks still win within the zone.
		nodes = slices.Concat(gt.Nodes("e1", 3, at("east", "e1")), gt.Nodes("e2", 1, at("east", "e2")),
			gt.Nodes("e3", 1, at("east", "e3")))
		plan, diag = placement.Place(cluster.New(nodes, nil), g, placement.Options{})
		if diag != nil {
			t.Fatal(diag)
		}
		racks := map[string]int{}
		for _, a := range plan.Assignments {
			racks[a.Node[:2]]++
		}
		if len(racks) != 2 || racks["e1"] != 3 {
			t.Fatalf("racks used %v, want all of e1 and one other", racks)
		}
	})
}

// TestPacking: among feasible plans, the one that keeps whole nodes free.
func TestPacking(t *testing.T) {
	nodes := gpuNodes("n", 4, 8)
	bound := []*corev1.Pod{
		gt.Pod("x0").GPU(4).Node("n-1").Obj(),
		gt.Pod("x1").GPU(4).Node("n-3").Obj(),
	}
	snap := cluster.New(nodes, bound)
	plan, diag := placement.Place(snap, gt.Group("g").Members(8).GPU(1).Build(), placement.Options{})
	if diag != nil {
		t.Fatal(diag)
	}
	got := map[string]int{}
	for _, a := range plan.Assignments {
		got[a.Node]++
	}
	if d := cmp.Diff(map[string]int{"n-1": 4, "n-3": 4}, got); d != "" {
		t.Fatalf("placement did not fill the half-used nodes first (-want +got):\n%s", d)
	}

	// A CPU-only launcher goes to a node without GPUs.
	nodes = append(gpuNodes("g", 2, 8), gt.Node("cpu-0").Obj())
	snap = cluster.New(nodes, nil)
	launcher := gt.Pod("launcher").Req(corev1.ResourceCPU, "1").Obj()
	plan, diag = placement.Place(snap, gt.Group("mpi").Members(2).GPU(8).Plus("launcher", launcher).Build(), placement.Options{})
	if diag != nil {
		t.Fatal(diag)
	}
	if n := plan.NodeOf("launcher"); n != "cpu-0" {
		t.Fatalf("launcher on %q, want cpu-0", n)
	}
}

func TestExcludeReserved(t *testing.T) {
	snap := cluster.New(gpuNodes("n", 2, 1), nil)
	_, diag := placement.Place(snap, gt.Group("g").Members(2).GPU(1).Build(), placement.Options{
		Exclude: func(n string) bool { return n == "n-1" },
	})
	if diag == nil || diag.Code != placement.Unschedulable {
		t.Fatalf("want Unschedulable, got %v", diag)
	}
	if want := "1 node(s) were reserved for a waiting group"; !strings.Contains(diag.String(), want) {
		t.Fatalf("diagnosis %q does not contain %q", diag, want)
	}
}

// TestFitsOn: one member on a named node passes or fails by Place's own predicates.
func TestFitsOn(t *testing.T) {
	snap := cluster.FromLists([]corev1.Node{*gt.Node("n-0").GPU(2).Obj(), *gt.Node("n-1").GPU(2).Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj()}, nil)
	pod := gt.Pod("p").GPU(1).Obj()
	m := placement.Member{Name: "default/p", Pod: pod}
	if r, ok := placement.FitsOn(snap, "n-0", m); !ok {
		t.Errorf("n-0: expected a fit, found %s", r)
	}
	if r, ok := placement.FitsOn(snap, "n-1", m); ok || r.Kind != placement.UntoleratedTaint {
		t.Errorf("n-1: expected an untolerated taint, found fit %t, %s", ok, r)
	}
	if r, ok := placement.FitsOn(snap, "gone", m); ok || r.Kind != placement.NodeNotFound {
		t.Errorf("a node that does not exist: expected NodeNotFound, found fit %t, %s", ok, r)
	}
	big := placement.Member{Name: "default/big", Pod: gt.Pod("big").GPU(3).Obj()}
	if r, ok := placement.FitsOn(snap, "n-0", big); ok || r.String() != "Insufficient nvidia.com/gpu" {
		t.Errorf("3 GPUs on a node of 2: expected Insufficient nvidia.com/gpu, found fit %t, %s", ok, r)
	}
}

// TestDiagnosisSame: two groups of one signature that fail for the same reason get
// diagnoses Same says are equal, as their renderings for one group are; a different
// reason is not the same.
func TestDiagnosisSame(t *testing.T) {
	snap := cluster.New(gpuNodes("n", 2, 8), []*corev1.Pod{gt.Pod("other-0").GPU(6).Node("n-0").Obj()})
	a, b := gt.Group("a").Members(3).GPU(4).Build(), gt.Group("b").Members(3).GPU(4).Build()
	_, da := placement.Place(snap, a, placement.Options{})
	_, db := placement.Place(snap, b, placement.Options{})
	if da == nil || db == nil {
		t.Fatalf("3 × 4 GPUs with 10 GPUs free in pieces of 2 and 8: want two diagnoses, got %v and %v", da, db)
	}
	if !da.Same(db) || !reflect.DeepEqual(da.For(a), db.For(a)) {
		t.Errorf("same signature, same failure: Same = %t, renderings %q and %q", da.Same(db), da.For(a), db.For(a))
	}
	snap.AddPod(gt.Pod("other-1").GPU(6).Node("n-1").Obj()) // 2 GPUs free on each node
	_, dc := placement.Place(snap, b, placement.Options{})
	if dc == nil || da.Same(dc) || reflect.DeepEqual(da.For(a), dc.For(a)) {
		t.Errorf("another failure (%v) is the same as %v", dc, da)
	}
}

// TestForNamesShapes: For names each shape of the group it describes by that group's
// first member of it, for a gang of one shape (named without its shapes being keyed)
// as for one of two, whose members of one shape may come in another order.
func TestForNamesShapes(t *testing.T) {
	snap := cluster.New(gpuNodes("n", 1, 2), nil)
	names := func(d *placement.Diagnosis) []string {
		var out []string
		for _, s := range d.Shapes {
			out = append(out, s.Shape)
		}
		return out
	}
	one := gt.Group("a").Members(3).GPU(4).Build()
	_, d := placement.Place(snap, one, placement.Options{})
	if got, want := names(d.For(gt.Group("b").Members(3).GPU(4).Build())), []string{"b-worker-0 ×3"}; !slices.Equal(got, want) {
		t.Errorf("one shape: For names %q, want %q", got, want)
	}
	cpu := gt.Pod("a-cpu").Req(corev1.ResourceCPU, "1").Obj()
	two := gt.Group("a").Members(2).GPU(4).Plus("a-cpu", cpu).Build()
	_, d = placement.Place(snap, two, placement.Options{})
	other := gt.Group("b").Members(2).GPU(4).Plus("b-cpu", gt.Pod("b-cpu").Req(corev1.ResourceCPU, "1").Obj()).Build()
	other.Members[1], other.Members[2] = other.Members[2], other.Members[1] // the workers
	for i := range other.Members {
		other.Members[i].Key = placement.ShapeKey(other.Members[i])
	}
	if got, want := names(d.For(other)), []string{"b-worker-1 ×2", "b-cpu"}; !slices.Equal(got, want) {
		t.Errorf("two shapes: For names %q, want %q", got, want)
	}
}
