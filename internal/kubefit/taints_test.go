package kubefit_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// TestDeviceTaintRules: a DeviceTaintRule that taints n0's gpu-0 NoSchedule keeps it
// from being allocated, as kube-scheduler's tracker shows it: a claim of one GPU gets
// gpu-1, a second claim finds n0 full, and when the rule is removed gpu-0 is free again.
// An effect of None is information only.
func TestDeviceTaintRules(t *testing.T) {
	h, err := kubefit.New(kubefit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		effect resourcev1.DeviceTaintEffect
		blocks bool
	}{
		{resourcev1.DeviceTaintEffectNoSchedule, true},
		{resourcev1.DeviceTaintEffectNoExecute, true},
		{resourcev1.DeviceTaintEffectNone, false},
	} {
		t.Run(string(tc.effect), func(t *testing.T) {
			snap, pods := draSnapshot(2)
			rule := gt.DeviceTaintRule("drain-gpu-0", "n0", "gpu-0", tc.effect)
			snap.SetObject(rule)
			n0 := snap.Node("n0")
			c, err := h.Begin(snap, pods[0])
			if err != nil {
				t.Fatal(err)
			}
			if v := c.Filter(n0); !v.OK() {
				t.Fatalf("w0 on n0 with gpu-1 untainted: %+v", v)
			}
			claims, err := c.Reserve(pods[0], n0)
			if err != nil {
				t.Fatal(err)
			}
			got := claims[0].Allocation.Devices.Results[0].Device
			if tc.blocks && got != "gpu-1" {
				t.Fatalf("w0 allocated %s, want gpu-1: gpu-0 is tainted %s", got, tc.effect)
			}
			undo, err := kubefit.Assume(snap, pods[0], claims)
			if err != nil {
				t.Fatal(err)
			}
			defer undo()
			if c, err = h.Begin(snap, pods[1]); err != nil {
				t.Fatal(err)
			}
			v := c.Filter(n0)
			if v.OK() == tc.blocks {
				t.Fatalf("w1 on n0 with %s allocated and gpu-0 tainted %s: %+v", got, tc.effect, v)
			}
			if tc.blocks && !strings.Contains(strings.Join(v.Reasons, " "), "cannot allocate all claims") {
				t.Fatalf("w1 on n0: %+v, want the plugin's reason", v)
			}
			snap.RemoveObject(rule)
			if c, err = h.Begin(snap, pods[1]); err != nil {
				t.Fatal(err)
			}
			if v := c.Filter(n0); !v.OK() {
				t.Fatalf("w1 on n0 once the rule is gone: %+v", v)
			}
		})
	}
}

// TestTaintedDevicesNotCounted: the forecast's counts leave out a device a
// DeviceTaintRule (NoSchedule) or its slice (NoExecute) taints, allocated or not: n0's
// gpu-0, allocated to w0, counts in neither the node's devices, the claimed ones, nor
// what w0 gives back; n1's gpu-1 counts in none either. A taint of effect None leaves
// the counts as they are.
func TestTaintedDevicesNotCounted(t *testing.T) {
	snap, pods := draSnapshot(1)
	w0 := pods[0]
	snap.SetObject(allocated(snap.ResourceClaim("default/w0-gpu"), "n0", 0, w0))
	objs := snap.Objects()
	untainted := map[string]cluster.Resources{"n0": {gt.GPUClass: 2}, "n1": {gt.GPUClass: 2}}
	if d := cmp.Diff(untainted, kubefit.NodeDevices(objs)); d != "" {
		t.Fatalf("before any taint (-want +got):\n%s", d)
	}
	snap.SetObject(gt.DeviceTaintRule("info", "n1", "gpu-0", resourcev1.DeviceTaintEffectNone))
	if d := cmp.Diff(untainted, kubefit.NodeDevices(objs)); d != "" {
		t.Fatalf("with a taint of effect None (-want +got):\n%s", d)
	}
	snap.SetObject(gt.DeviceTaintRule("drain", "n0", "gpu-0", resourcev1.DeviceTaintEffectNoSchedule))
	slice := gt.GPUSlice("n1", 2, "clique-a")
	slice.Spec.Devices[1].Taints = []resourcev1.DeviceTaint{{Key: "example.com/ecc", Effect: resourcev1.DeviceTaintEffectNoExecute}}
	snap.SetObject(slice)
	want := map[string]cluster.Resources{"n0": {gt.GPUClass: 1}, "n1": {gt.GPUClass: 1}}
	if d := cmp.Diff(want, kubefit.NodeDevices(objs)); d != "" {
		t.Errorf("node devices with gpu-0 of n0 and gpu-1 of n1 tainted (-want +got):\n%s", d)
	}
	if got := kubefit.ClaimedDevices(objs); len(got) != 0 {
		t.Errorf("claimed devices %v, want none: w0's gpu-0 is tainted", got)
	}
	if got := kubefit.OwnDevices(snap, w0); len(got) != 0 {
		t.Errorf("w0 gives back %v, want nothing: its gpu-0 is tainted", got)
	}
}

// TestTaintedDevicesCountForTheClaimsThatTolerateThem: of n0's two GPUs, gpu-0 is
// drained. It counts as free only for a member whose request tolerates the drain's
// taint (a claim with a toleration of another key does not), and, allocated, for none;
// DeviceTolerationsOf reads the tolerations of the pod's claims.
func TestTaintedDevicesCountForTheClaimsThatTolerateThem(t *testing.T) {
	snap, _ := draSnapshot(0)
	snap.SetObject(gt.DeviceTaintRule("drain", "n0", "gpu-0", resourcev1.DeviceTaintEffectNoSchedule))
	objs := snap.Objects()
	claim := func(name, key string) *corev1.Pod {
		c := gt.GPUClaim("default", name, 1)
		if key != "" {
			c.Spec.Devices.Requests[0].Exactly.Tolerations = []resourcev1.DeviceToleration{{Key: key, Operator: resourcev1.DeviceTolerationOpExists}}
		}
		snap.SetObject(c)
		return gt.Pod(name).UID("uid-"+name).DeviceClaim("gpu", name).Obj()
	}
	gpus := []corev1.ResourceName{gt.GPUClass}
	for _, c := range []struct {
		name, key string
		want      int64
	}{{"plain", "", 1}, {"tolerant", "example.com/unhealthy", 2}, {"other", "example.com/other", 1}} {
		tol := kubefit.DeviceTolerationsOf(snap, claim(c.name, c.key))
		if got := kubefit.FreeDevices(objs, "n0", gpus, tol); got != c.want {
			t.Errorf("%s (tolerations %v): %d free GPUs on n0, want %d", c.name, tol, got, c.want)
		}
	}
	snap.SetObject(allocated(gt.GPUClaim("default", "running", 1), "n0", 0))
	tol := kubefit.DeviceTolerationsOf(snap, claim("late", "example.com/unhealthy"))
	if got := kubefit.FreeDevices(objs, "n0", gpus, tol); got != 1 {
		t.Errorf("with the drained GPU allocated: %d free GPUs on n0 for a tolerant member, want 1", got)
	}
}
