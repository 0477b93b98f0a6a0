package kubefit_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// draSnapshot is two nodes with two DRA GPUs each (no extended resource), the GPU
// DeviceClass, and one one-GPU claim per worker w0…w(workers-1).
func draSnapshot(workers int) (*cluster.Snapshot, []*corev1.Pod) {
	snap := cluster.New([]*corev1.Node{gt.Node("n0").Obj(), gt.Node("n1").Obj()}, nil)
	snap.SetObject(gt.DeviceClass())
	snap.SetObject(gt.GPUSlice("n0", 2, "clique-a"))
	snap.SetObject(gt.GPUSlice("n1", 2, "clique-a"))
	var pods []*corev1.Pod
	for i := range workers {
		name := fmt.Sprintf("w%d", i)
		snap.SetObject(gt.GPUClaim("default", name+"-gpu", 1))
		pods = append(pods, gt.Pod(name).UID("uid-"+name).DeviceClaim("gpu", name+"-gpu").Obj())
	}
	return snap, pods
}

// TestReserveCountsEarlierMembers: members reserved on a node take its devices for the
// members after them; the third member finds n0 full and the plugin says why.
func TestReserveCountsEarlierMembers(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, pods := draSnapshot(3)
	n0 := snap.Node("n0")
	g := kubefit.NewGroupState()
	var reverts []func()
	seen := map[string]bool{}
	for _, p := range pods[:2] {
		c, err := h.BeginIn(snap, p, g)
		if err != nil {
			t.Fatal(err)
		}
		if v := c.Filter(n0); !v.OK() {
			t.Fatalf("%s on n0: %+v", p.Name, v)
		}
		claims, revert, err := c.Reserve(p, n0)
		if err != nil {
			t.Fatal(err)
		}
		reverts = append(reverts, revert)
		if len(claims) != 1 || claims[0].Allocation == nil || len(claims[0].Allocation.Devices.Results) != 1 {
			t.Fatalf("%s: claims %+v", p.Name, claims)
		}
		r := claims[0].Allocation.Devices.Results[0]
		if r.Driver != gt.GPUDriver || r.Pool != "n0" || seen[r.Device] {
			t.Fatalf("%s: allocated %+v (seen %v)", p.Name, r, seen)
		}
		seen[r.Device] = true
	}
	c, err := h.BeginIn(snap, pods[2], g)
	if err != nil {
		t.Fatal(err)
	}
	v := c.Filter(n0)
	if v.Plugin != "DynamicResources" || !strings.Contains(strings.Join(v.Reasons, " "), "cannot allocate all claims") {
		t.Fatalf("third member on full n0: %+v", v)
	}
	if v := c.Filter(snap.Node("n1")); !v.OK() {
		t.Fatalf("third member on n1: %+v", v)
	}
	// Undone, the devices are free again.
	for _, r := range reverts {
		r()
	}
	c, err = h.BeginIn(snap, pods[2], kubefit.NewGroupState())
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Filter(n0); !v.OK() {
		t.Fatalf("after revert, n0: %+v", v)
	}
}

// TestAssumedClaimTakesDevices: a claim the snapshot shows allocated (as the engine
// assumes a plan's claims) takes its devices for later placements, and forgetting it
// frees them.
func TestAssumedClaimTakesDevices(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, pods := draSnapshot(2)
	n0 := snap.Node("n0")
	c, err := h.Begin(snap, pods[0])
	if err != nil {
		t.Fatal(err)
	}
	c.Filter(n0)
	claims, revert, err := c.Reserve(pods[0], n0)
	if err != nil {
		t.Fatal(err)
	}
	revert()
	big := gt.GPUClaim("default", "w1-gpu", 2)
	snap.SetObject(big)
	cp := snap.ResourceClaim("default/w0-gpu").DeepCopy()
	cp.Status.Allocation = claims[0].Allocation
	snap.AssumeClaim(cp)
	c, err = h.Begin(snap, pods[1])
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Filter(n0); v.OK() {
		t.Fatal("a two-GPU claim fits n0 with one of its GPUs assumed allocated")
	}
	// An observation of the claim without its allocation does not free the devices.
	snap.SetObject(gt.GPUClaim("default", "w0-gpu", 1))
	if c, _ = h.Begin(snap, pods[1]); c.Filter(n0).OK() {
		t.Fatal("a stale observation freed the assumed devices")
	}
	snap.ForgetClaim("default/w0-gpu")
	if c, _ = h.Begin(snap, pods[1]); !c.Filter(n0).OK() {
		t.Fatalf("after ForgetClaim, n0: %+v", c.Filter(n0))
	}
	// The empty cluster shows every claim unallocated.
	snap.AssumeClaim(cp)
	if c, _ = h.Begin(snap.Empty(), pods[1]); !c.Filter(snap.Empty().Node("n0")).OK() {
		t.Fatal("the empty cluster counts an allocated claim")
	}
}
