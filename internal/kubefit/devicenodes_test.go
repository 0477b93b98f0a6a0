package kubefit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// TestDeviceNodes: a claim whose request narrows its class with selectors of its own is
// served only by the nodes with enough devices those select; a pod's requests must all
// be served on the same node; claims without such selectors, or allocated already, do
// not narrow the nodes.
func TestDeviceNodes(t *testing.T) {
	snap := cluster.New([]*corev1.Node{gt.Node("n0").Obj(), gt.Node("n1").Obj(), gt.Node("n2").Obj()}, nil)
	snap.SetObject(gt.DeviceClass())
	snap.SetObject(gt.GPUSlice("n0", 2, "clique-a"))
	snap.SetObject(gt.GPUSlice("n1", 2, "clique-b"))
	snap.SetObject(gt.GPUSlice("n2", 1, "clique-b"))
	const inB = `device.attributes["gpu.nvidia.com"].cliqueID == "clique-b"`
	claims := map[string]int64{"b1": 1, "b2": 2, "c1": 1, "any2": 2, "second": 1}
	sels := map[string]string{"b1": inB, "b2": inB, "c1": `device.attributes["gpu.nvidia.com"].cliqueID == "clique-c"`,
		"second": `device.attributes["gpu.nvidia.com"].index >= 1`}
	for name, count := range claims {
		if sel := sels[name]; sel != "" {
			snap.SetObject(gt.GPUClaim("default", name, count, sel))
		} else {
			snap.SetObject(gt.GPUClaim("default", name, count))
		}
	}
	pod := func(claims ...string) *corev1.Pod {
		b := gt.Pod("w").UID("uid-w")
		for _, c := range claims {
			b = b.DeviceClaim(c, c)
		}
		return b.Obj()
	}
	memo := map[string][]string{}
	for _, c := range []struct {
		claims []string
		want   []string
	}{
		{[]string{"b1"}, []string{"n1", "n2"}},
		{[]string{"b2"}, []string{"n1"}},
		{[]string{"c1"}, []string{}},
		{[]string{"any2"}, nil},
		{[]string{"b1", "second"}, []string{"n1"}},
		{[]string{"any2", "b1"}, []string{"n1", "n2"}},
	} {
		got := kubefit.DeviceNodes(snap, pod(c.claims...), memo)
		if diff := cmp.Diff(c.want, got); diff != "" || (c.want == nil) != (got == nil) {
			t.Errorf("DeviceNodes(%v) = %#v (-want +got):\n%s", c.claims, got, diff)
		}
	}
	// Allocated, b2's devices are chosen: it no longer narrows the nodes.
	snap.SetObject(allocated(snap.ResourceClaim("default/b2"), "n1", 0))
	if got := kubefit.DeviceNodes(snap, pod("b2"), memo); got != nil {
		t.Errorf("DeviceNodes(allocated b2) = %v, want nil", got)
	}
}
