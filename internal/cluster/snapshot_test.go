package cluster_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
)

func TestResources(t *testing.T) {
	r := cluster.FromList(corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1500m"),
		corev1.ResourceMemory: resource.MustParse("2Gi"),
		gt.GPU:                resource.MustParse("4"),
	})
	want := cluster.Resources{corev1.ResourceCPU: 1500, corev1.ResourceMemory: 2 << 30, gt.GPU: 4}
	if d := cmp.Diff(want, r); d != "" {
		t.Fatalf("FromList (-want +got):\n%s", d)
	}
	if got := r.String(); got != "{cpu: 1500m, memory: 2Gi, nvidia.com/gpu: 4}" {
		t.Errorf("String() = %q", got)
	}
	if !cluster.FromList(r.List()).Equal(r) {
		t.Errorf("List and FromList do not round-trip: %v", r.List())
	}
	if !cluster.IsExtended(gt.GPU) || cluster.IsExtended(corev1.ResourceCPU) || cluster.IsExtended("hugepages-2Mi") {
		t.Error("IsExtended misclassifies nvidia.com/gpu, cpu or hugepages")
	}
}

func TestPodRequests(t *testing.T) {
	p := gt.Pod("p").Req(corev1.ResourceCPU, "1").GPU(2).
		Init(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}).
		Overhead(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}).Obj()
	want := cluster.Resources{corev1.ResourceCPU: 3250, gt.GPU: 2, corev1.ResourcePods: 1}
	if d := cmp.Diff(want, cluster.PodRequests(p)); d != "" {
		t.Fatalf("PodRequests (-want +got):\n%s", d)
	}
}

func TestSnapshotAccounting(t *testing.T) {
	running := gt.Pod("run").GPU(2).Node("n-0").Obj()
	done := gt.Pod("done").GPU(4).Node("n-0").Obj()
	done.Status.Phase = corev1.PodSucceeded
	pending := gt.Pod("pending").GPU(1).Obj()
	elsewhere := gt.Pod("ghost").GPU(1).Node("missing").Obj()
	s := cluster.New([]*corev1.Node{gt.Node("n-0").GPU(8).Obj(), gt.Node("n-1").GPU(8).Obj()},
		[]*corev1.Pod{running, done, pending, elsewhere})
	n0 := s.Node("n-0")
	if got := n0.Free(gt.GPU); got != 6 {
		t.Fatalf("n-0 free GPUs = %d, want 6: only the running pod counts", got)
	}
	if got := n0.Fits(cluster.Resources{gt.GPU: 2}); got != 3 {
		t.Errorf("Fits(2 GPUs) = %d, want 3", got)
	}

	before := s.Usage()
	undo := s.Assume(n0, cluster.Resources{gt.GPU: 6})
	if n0.Fits(cluster.Resources{gt.GPU: 1}) != 0 {
		t.Error("an assumed request did not count")
	}
	undo()
	if d := cmp.Diff(before, s.Usage()); d != "" {
		t.Errorf("revert did not restore the usage (-before +after):\n%s", d)
	}

	s.RemovePod(cluster.PodKey(running))
	if got := n0.Free(gt.GPU); got != 8 {
		t.Errorf("after RemovePod n-0 has %d GPUs free, want 8", got)
	}
	s.Bind(pending, "n-1")
	if !s.Bound(cluster.PodKey(pending)) || s.Node("n-1").Free(gt.GPU) != 7 {
		t.Error("Bind did not count the pod on n-1")
	}
	// The ghost pod's node appears: its pod counts from then on.
	s.SetNode(gt.Node("missing").GPU(1).Obj())
	if got := s.Node("missing").Free(gt.GPU); got != 0 {
		t.Errorf("a node added after its pod has %d GPUs free, want 0", got)
	}
	if names := nodeNames(s); !cmp.Equal(names, []string{"missing", "n-0", "n-1"}) {
		t.Errorf("nodes %v are not sorted by name", names)
	}
	if empty := s.Empty(); empty.Node("n-1").Free(gt.GPU) != 8 || s.Node("n-1").Free(gt.GPU) != 7 {
		t.Error("Empty must drop every pod from the copy and leave the snapshot alone")
	}
}

func TestNodeReadiness(t *testing.T) {
	s := cluster.New([]*corev1.Node{gt.Node("up").Obj(), gt.Node("down").NotReady().Obj()}, nil)
	if !s.Node("up").Ready() || s.Node("down").Ready() {
		t.Fatal("readiness not read from the Ready condition")
	}
	s.SetNode(gt.Node("up").NotReady().Obj())
	if s.Node("up").Ready() {
		t.Error("SetNode did not update readiness")
	}
}

func nodeNames(s *cluster.Snapshot) []string {
	var out []string
	for _, n := range s.Nodes() {
		out = append(out, n.Name())
	}
	return out
}

// TestAllocatableFollowsNodes checks that the summed allocatable is made again when a
// node is added, replaced or removed, and not changed by pods.
func TestAllocatableFollowsNodes(t *testing.T) {
	s := cluster.New([]*corev1.Node{gt.Node("n-0").GPU(8).Obj()}, nil)
	gpus := func() int64 { return s.Allocatable()[gt.GPU] }
	if got := gpus(); got != 8 {
		t.Fatalf("allocatable GPUs = %d, want 8", got)
	}
	s.AddPod(gt.Pod("run").GPU(2).Node("n-0").Obj())
	if got := gpus(); got != 8 {
		t.Errorf("with a pod bound: allocatable GPUs = %d, want 8", got)
	}
	s.SetNode(gt.Node("n-1").GPU(4).Obj())
	if got := gpus(); got != 12 {
		t.Errorf("with n-1 added: allocatable GPUs = %d, want 12", got)
	}
	s.SetNode(gt.Node("n-0").GPU(2).Obj())
	if got := gpus(); got != 6 {
		t.Errorf("with n-0 replaced: allocatable GPUs = %d, want 6", got)
	}
	s.RemoveNode("n-1")
	if got := gpus(); got != 2 {
		t.Errorf("with n-1 removed: allocatable GPUs = %d, want 2", got)
	}
}
