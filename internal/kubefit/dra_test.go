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

// TestReserveCountsEarlierMembers: members reserved and assumed on a node take its
// devices for the members after them; the third member finds n0 full and the plugin
// says why; undone, the devices are free again.
func TestReserveCountsEarlierMembers(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, pods := draSnapshot(3)
	n0 := snap.Node("n0")
	var undos []func()
	seen := map[string]bool{}
	for _, p := range pods[:2] {
		c, err := h.Begin(snap, p)
		if err != nil {
			t.Fatal(err)
		}
		if v := c.Filter(n0); !v.OK() {
			t.Fatalf("%s on n0: %+v", p.Name, v)
		}
		claims, err := c.Reserve(p, n0)
		if err != nil {
			t.Fatal(err)
		}
		if len(claims) != 1 || claims[0].Allocation == nil || len(claims[0].Allocation.Devices.Results) != 1 {
			t.Fatalf("%s: claims %+v", p.Name, claims)
		}
		r := claims[0].Allocation.Devices.Results[0]
		if r.Driver != gt.GPUDriver || r.Pool != "n0" || seen[r.Device] {
			t.Fatalf("%s: allocated %+v (seen %v)", p.Name, r, seen)
		}
		seen[r.Device] = true
		undo, err := kubefit.Assume(snap, p, claims)
		if err != nil {
			t.Fatal(err)
		}
		undos = append(undos, undo)
		got := snap.ResourceClaim("default/" + p.Name + "-gpu")
		if got.Status.Allocation == nil || len(got.Status.ReservedFor) != 1 || got.Status.ReservedFor[0].UID != p.UID {
			t.Fatalf("%s: assumed claim %+v", p.Name, got.Status)
		}
	}
	c, err := h.Begin(snap, pods[2])
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
	for i := len(undos) - 1; i >= 0; i-- {
		undos[i]()
	}
	if c, _ = h.Begin(snap, pods[2]); !c.Filter(n0).OK() {
		t.Fatalf("after the undos, n0: %+v", c.Filter(n0))
	}
}

// TestSharedClaim: two members share one two-GPU claim; the second finds it allocated
// by the first, is held to the first's node, and adds its own reservation.
func TestSharedClaim(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := draSnapshot(0)
	snap.SetObject(gt.GPUClaim("default", "shared", 2))
	a := gt.Pod("a").UID("uid-a").DeviceClaim("gpu", "shared").Obj()
	b := gt.Pod("b").UID("uid-b").DeviceClaim("gpu", "shared").Obj()
	n1 := snap.Node("n1")
	c, _ := h.Begin(snap, a)
	if v := c.Filter(n1); !v.OK() {
		t.Fatalf("a on n1: %+v", v)
	}
	claims, err := c.Reserve(a, n1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubefit.Assume(snap, a, claims); err != nil {
		t.Fatal(err)
	}
	c, _ = h.Begin(snap, b)
	if v := c.Filter(snap.Node("n0")); v.OK() || v.Plugin != "DynamicResources" {
		t.Fatalf("b on n0, away from its claim's devices: %+v", v)
	}
	if v := c.Filter(n1); !v.OK() {
		t.Fatalf("b on n1: %+v", v)
	}
	claims, err = c.Reserve(b, n1)
	if err != nil || len(claims) != 1 || claims[0].Allocation != nil {
		t.Fatalf("b: claims %+v, %v (want the claim, allocated already)", claims, err)
	}
	if _, err := kubefit.Assume(snap, b, claims); err != nil {
		t.Fatal(err)
	}
	if got := snap.ResourceClaim("default/shared").Status.ReservedFor; len(got) != 2 {
		t.Fatalf("reservedFor %+v, want a and b", got)
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
	claims, err := c.Reserve(pods[0], n0)
	if err != nil {
		t.Fatal(err)
	}
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
