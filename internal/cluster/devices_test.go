package cluster_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
)

// TestDerivedFromObjectsIsKeptWhileTheyStay: what another package derives from the
// devices is derived again once a ResourceSlice changes and not before (a claim's
// change keeps it), what it derives from the objects once any of them changes; the
// empty cluster's objects keep what was derived from the devices when no device is
// tainted, and derive it again, untainted, when one is.
func TestDerivedFromObjectsIsKeptWhileTheyStay(t *testing.T) {
	snap := cluster.New([]*corev1.Node{gt.Node("n0").Obj()}, nil)
	snap.SetObject(gt.DeviceClass())
	snap.SetObject(gt.GPUSlice("n0", 2, "a"))
	var devices, objects int
	ofDevices := func(objs *cluster.Objects) any {
		return objs.OfDevices("test", func() any { devices++; return devices })
	}
	ofObjects := func(objs *cluster.Objects) any {
		return objs.OfObjects("test", func() any { objects++; return objects })
	}
	check := func(step string, gotDevices, gotObjects any, wantDevices, wantObjects int) {
		t.Helper()
		if gotDevices != wantDevices || gotObjects != wantObjects {
			t.Errorf("%s: derived from the devices %v, from the objects %v; want %d and %d", step, gotDevices, gotObjects, wantDevices, wantObjects)
		}
	}
	objs := snap.Objects()
	check("first", ofDevices(objs), ofObjects(objs), 1, 1)
	check("again", ofDevices(objs), ofObjects(objs), 1, 1)
	snap.SetObject(gt.GPUClaim("default", "c", 1))
	check("a claim made", ofDevices(objs), ofObjects(objs), 1, 2)
	empty := snap.Empty().Objects()
	check("the empty cluster, no device tainted", ofDevices(empty), ofObjects(empty), 1, 3)
	snap.SetObject(gt.GPUSlice("n0", 4, "a"))
	check("a slice changed", ofDevices(objs), ofObjects(objs), 2, 4)
	snap.SetObject(gt.DeviceTaintRule("drain", "n0", "gpu-0", resourcev1.DeviceTaintEffectNoSchedule))
	check("a taint rule made", ofDevices(objs), ofObjects(objs), 3, 5)
	empty = snap.Empty().Objects()
	check("the empty cluster, a device tainted", ofDevices(empty), ofObjects(empty), 4, 6)
}
