package kubefit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// allocated is claim allocated device gpu-i of node's pool to its request gpus, and
// reserved for the pods given.
func allocated(claim *resourcev1.ResourceClaim, node string, i int, pods ...*corev1.Pod) *resourcev1.ResourceClaim {
	c := claim.DeepCopy()
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpus", Driver: gt.GPUDriver, Pool: node, Device: gpuName(i)}},
	}}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

func gpuName(i int) string { return "gpu-" + string(rune('0'+i)) }

// TestNodeDevices: each node counts the devices its newest slices publish that every
// selector of a class matches; an older generation of a pool, a device of no single
// node and a selector that fails to compile count nothing.
func TestNodeDevices(t *testing.T) {
	snap := cluster.New([]*corev1.Node{gt.Node("n0").Obj(), gt.Node("n1").Obj()}, nil)
	objs := snap.Objects()
	if got := kubefit.NodeDevices(objs); got != nil {
		t.Fatalf("no slices: %v, want nil", got)
	}
	snap.SetObject(gt.DeviceClass())
	snap.SetObject(&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{
			{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`}},
			{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].index < 1`}},
		}}})
	snap.SetObject(&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.nonsense(`}}}}})
	snap.SetObject(gt.GPUSlice("n0", 2, "a"))
	n1 := gt.GPUSlice("n1", 4, "a")
	snap.SetObject(n1)
	stale := gt.GPUSlice("n1", 8, "a")
	stale.Name, stale.Spec.Pool.Generation = "n1-old", 0
	snap.SetObject(stale)
	network := gt.GPUSlice("n0", 3, "a")
	network.Name, network.Spec.NodeName, network.Spec.AllNodes, network.Spec.Pool.Name = "fabric", nil, ptr.To(true), "fabric"
	snap.SetObject(network)
	want := map[string]cluster.Resources{
		"n0": {gt.GPUClass: 2, "h100": 1},
		"n1": {gt.GPUClass: 4, "h100": 1},
	}
	if diff := cmp.Diff(want, kubefit.NodeDevices(objs)); diff != "" {
		t.Errorf("NodeDevices (-want +got):\n%s", diff)
	}
}

// TestClaimedAndOwnDevices: allocated claims count on the node their device is on, per
// class; a member gives back the devices of its own claims, not of a claim it shares,
// and a pending member asks for what its unallocated claims request.
func TestClaimedAndOwnDevices(t *testing.T) {
	snap, pods := draSnapshot(3)
	w0, w1, w2 := pods[0], pods[1], pods[2]
	snap.SetObject(allocated(snap.ResourceClaim("default/w0-gpu"), "n0", 0, w0))
	shared := gt.GPUClaim("default", "shared", 1)
	snap.SetObject(allocated(shared, "n1", 1, w1, w2))
	w1 = gt.Pod("w1").UID("uid-w1").DeviceClaim("gpu", "w1-gpu").DeviceClaim("shared", "shared").Obj()

	claimed := map[string]cluster.Resources{"n0": {gt.GPUClass: 1}, "n1": {gt.GPUClass: 1}}
	if diff := cmp.Diff(claimed, kubefit.ClaimedDevices(snap.Objects())); diff != "" {
		t.Errorf("ClaimedDevices (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(cluster.Resources{gt.GPUClass: 1}, kubefit.OwnDevices(snap, w0)); diff != "" {
		t.Errorf("OwnDevices(w0) (-want +got):\n%s", diff)
	}
	if got := kubefit.OwnDevices(snap, w1); got != nil {
		t.Errorf("OwnDevices(w1) = %v: its own claim is not allocated and the other is shared", got)
	}
	seen := map[string]bool{}
	if diff := cmp.Diff(cluster.Resources{gt.GPUClass: 1}, kubefit.PendingDevices(snap, w1, seen, nil, 0)); diff != "" {
		t.Errorf("PendingDevices(w1) (-want +got):\n%s", diff)
	}
	if got := kubefit.PendingDevices(snap, w1, seen, nil, 0); got != nil {
		t.Errorf("PendingDevices(w1) again = %v: its claims were counted once", got)
	}
}

// TestPendingAllDevices: a request of all of a class's devices counts the fewest devices
// of the class a node has, one when no node has any; FewestDevices skips the nodes
// without the class.
func TestPendingAllDevices(t *testing.T) {
	nodes := map[string]cluster.Resources{"n0": {gt.GPUClass: 8}, "n1": {gt.GPUClass: 4, "h100": 1}, "n2": {"h100": 2}, "n3": {gt.GPUClass: 0}}
	fewest := kubefit.FewestDevices(nodes)
	if diff := cmp.Diff(cluster.Resources{gt.GPUClass: 4, "h100": 1}, fewest); diff != "" {
		t.Errorf("FewestDevices (-want +got):\n%s", diff)
	}
	snap, _ := draSnapshot(0)
	claim := gt.GPUClaim("default", "all", 0)
	claim.Spec.Devices.Requests[0].Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	snap.SetObject(claim)
	pod := gt.Pod("w").UID("uid-w").DeviceClaim("gpu", "all").Obj()
	for _, c := range []struct {
		fewest cluster.Resources
		want   int64
	}{{fewest, 4}, {nil, 1}} {
		if diff := cmp.Diff(cluster.Resources{gt.GPUClass: c.want}, kubefit.PendingDevices(snap, pod, map[string]bool{}, c.fewest, 0)); diff != "" {
			t.Errorf("PendingDevices with fewest %v (-want +got):\n%s", c.fewest, diff)
		}
	}
}

// TestPendingAlternatives: a request with alternatives (firstAvailable) counts the one
// asked for, its last when asked for one past it; Alternatives counts the most any of the
// pod's unallocated requests lists, one for a pod without alternatives.
func TestPendingAlternatives(t *testing.T) {
	snap, _ := draSnapshot(0)
	claim := gt.GPUClaim("default", "prefer", 1)
	claim.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
		{Name: "two", DeviceClassName: gt.GPUClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2},
		{Name: "one", DeviceClassName: gt.GPUClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
	}}}
	snap.SetObject(claim)
	snap.SetObject(gt.GPUClaim("default", "plain", 1))
	prefer := gt.Pod("w").UID("uid-w").DeviceClaim("gpu", "prefer").Obj()
	plain := gt.Pod("p").UID("uid-p").DeviceClaim("gpu", "plain").Obj()
	for alt, want := range []int64{2, 1, 1} {
		if diff := cmp.Diff(cluster.Resources{gt.GPUClass: want}, kubefit.PendingDevices(snap, prefer, map[string]bool{}, nil, alt)); diff != "" {
			t.Errorf("PendingDevices alternative %d (-want +got):\n%s", alt, diff)
		}
	}
	if got := kubefit.Alternatives(snap, prefer); got != 2 {
		t.Errorf("Alternatives(prefer) = %d, want 2", got)
	}
	if got := kubefit.Alternatives(snap, plain); got != 1 {
		t.Errorf("Alternatives(plain) = %d, want 1", got)
	}
}
