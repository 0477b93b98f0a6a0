package kubefit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// migObjects is node n0 with one GPU partitioned MIG-style (gt.MIGSlices), the classes
// of its profiles, and class mig-any, which selects every partition.
func migObjects() (*cluster.Snapshot, *cluster.Objects) {
	snap := gt.MIGCluster(1)
	snap.SetObject(&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "mig-any", ResourceVersion: "1"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + gt.MIGDriver + `"`}}}}})
	return snap, snap.Objects()
}

// allocatedMIG is a claim of one partition of profile, allocated device and reserved
// for the pods given.
func allocatedMIG(name, profile, device string, pods ...*corev1.Pod) *resourcev1.ResourceClaim {
	c := gt.MIGClaim("default", name, profile)
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpus", Driver: gt.MIGDriver, Pool: "n0", Device: device}},
	}}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

// TestPartitionsHeldAndGivenBack: what the forecast counts of partitions in use. A 3g
// partition in use, with a 1g, holds per class what it keeps from being allocated:
// four 1g (itself and three its slices shut out), one 3g (the other still fits in
// the three slices left), the 7g, and four of any profile. Its pod gives back, when it
// ends, three 1g, one 3g, three of any profile, and no 7g (the 1g still in use keeps
// the 7g out).
func TestPartitionsHeldAndGivenBack(t *testing.T) {
	snap, objs := migObjects()
	big := gt.Pod("big").UID("uid-big").DeviceClaim("mig", "big").Node("n0").Obj()
	small := gt.Pod("small").UID("uid-small").DeviceClaim("mig", "small").Node("n0").Obj()
	snap.SetObject(allocatedMIG("big", "3g", "gpu-0-3g-0", big))
	snap.SetObject(allocatedMIG("small", "1g", "gpu-0-1g-0", small))
	held := map[string]cluster.Resources{"n0": {"mig-1g": 4, "mig-3g": 1, "mig-7g": 1, "mig-any": 4}}
	if d := cmp.Diff(held, kubefit.ClaimedDevices(objs)); d != "" {
		t.Errorf("ClaimedDevices (-want +got):\n%s", d)
	}
	if d := cmp.Diff(cluster.Resources{"mig-1g": 3, "mig-3g": 1, "mig-any": 3}, kubefit.OwnDevices(snap, big)); d != "" {
		t.Errorf("OwnDevices(big) (-want +got):\n%s", d)
	}
	if d := cmp.Diff(cluster.Resources{"mig-1g": 1, "mig-any": 1}, kubefit.OwnDevices(snap, small)); d != "" {
		t.Errorf("OwnDevices(small) (-want +got):\n%s", d)
	}
}

// TestPartitionsCountByTheirCounters: a GPU's partitions count as many as its seven
// memory slices take together: seven 1g, two 3g, one 7g, and seven of any profile (not
// the ten partitions it lists). A counter set of an older generation of the pool counts
// for nothing.
func TestPartitionsCountByTheirCounters(t *testing.T) {
	snap, objs := migObjects()
	stale := gt.MIGSlices("n0")[0]
	stale.Name, stale.Spec.Pool.Generation = "n0-mig-counters-old", 0
	stale.Spec.SharedCounters[0].Counters["memory-slices"] = resourcev1.Counter{Value: resource.MustParse("70")}
	snap.SetObject(stale)
	want := map[string]cluster.Resources{"n0": {"mig-1g": 7, "mig-3g": 2, "mig-7g": 1, "mig-any": 7}}
	if d := cmp.Diff(want, kubefit.NodeDevices(objs)); d != "" {
		t.Errorf("NodeDevices (-want +got):\n%s", d)
	}
}

// TestFreePartitionsAreWhatTheCountersLeave: with a 3g partition allocated, the GPU's
// four memory slices left take four 1g partitions or one 3g, and no 7g; with the 7g
// allocated, no partition is free, though nine are not allocated.
func TestFreePartitionsAreWhatTheCountersLeave(t *testing.T) {
	free := func(objs *cluster.Objects) map[string]int64 {
		out := map[string]int64{}
		for _, class := range []string{"mig-1g", "mig-3g", "mig-7g", "mig-any"} {
			out[class] = kubefit.FreeDevices(objs, "n0", []corev1.ResourceName{corev1.ResourceName(class)}, nil)
		}
		return out
	}
	snap, objs := migObjects()
	if d := cmp.Diff(map[string]int64{"mig-1g": 7, "mig-3g": 2, "mig-7g": 1, "mig-any": 7}, free(objs)); d != "" {
		t.Errorf("none allocated: free partitions (-want +got):\n%s", d)
	}
	snap.SetObject(allocatedMIG("big", "3g", "gpu-0-3g-0"))
	if d := cmp.Diff(map[string]int64{"mig-1g": 4, "mig-3g": 1, "mig-7g": 0, "mig-any": 4}, free(objs)); d != "" {
		t.Errorf("a 3g allocated: free partitions (-want +got):\n%s", d)
	}
	snap.RemoveObject(allocatedMIG("big", "3g", "gpu-0-3g-0"))
	snap.SetObject(allocatedMIG("whole", "7g", "gpu-0-7g-0"))
	if d := cmp.Diff(map[string]int64{"mig-1g": 0, "mig-3g": 0, "mig-7g": 0, "mig-any": 0}, free(objs)); d != "" {
		t.Errorf("the 7g allocated: free partitions (-want +got):\n%s", d)
	}
}
