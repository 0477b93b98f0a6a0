package kubefit

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/muster-sched/muster/internal/cluster"
)

// classIndex is what FreeDevices reads of the devices: each device of a single node
// that no taint keeps new claims off, with its node and the DeviceClasses that select
// it, and each node's count of them per class. It is kept on the objects while the
// devices stay (cluster.Objects.OfDevices).
type classIndex struct {
	devices map[deviceKey]classedDevice
	total   map[string]cluster.Resources
}

// classedDevice is a device's node and the classes that select it.
type classedDevice struct {
	node    string
	classes []corev1.ResourceName
}

// classIndexOf returns the classIndex of objs's devices, made once per version of them.
func classIndexOf(objs *cluster.Objects) *classIndex {
	return objs.OfDevices("kubefit.classIndex", func() any { return indexClasses(objs) }).(*classIndex)
}

// indexClasses makes the classIndex of objs's devices.
func indexClasses(objs *cluster.Objects) *classIndex {
	idx := &classIndex{devices: map[deviceKey]classedDevice{}, total: map[string]cluster.Resources{}}
	ctx := context.Background()
	eachNodeDevice(objs, func(node string, key deviceKey, d dracel.Device) {
		var classes []corev1.ResourceName
		for name, class := range objs.DeviceClasses {
			if selectsAll(ctx, class.Spec.Selectors, d) {
				classes = append(classes, corev1.ResourceName(name))
			}
		}
		if len(classes) == 0 {
			return
		}
		idx.devices[key] = classedDevice{node: node, classes: classes}
		if idx.total[node] == nil {
			idx.total[node] = cluster.Resources{}
		}
		for _, c := range classes {
			idx.total[node][c]++
		}
	})
	return idx
}

// nodeClass is a node and a DeviceClass.
type nodeClass struct {
	node  string
	class corev1.ResourceName
}

// claimed counts, per node and class, the devices of idx that the ResourceClaims of
// objs have allocated: a device counts for every class that selects it, whatever the
// class of the request it was allocated for.
func (idx *classIndex) claimed(objs *cluster.Objects) map[nodeClass]int64 {
	out := map[nodeClass]int64{}
	for _, c := range objs.ResourceClaims {
		a := c.Status.Allocation
		if a == nil {
			continue
		}
		for _, res := range a.Devices.Results {
			d, ok := idx.devices[deviceKey{res.Driver, res.Pool, res.Device}]
			if !ok {
				continue
			}
			for _, class := range d.classes {
				out[nodeClass{d.node, class}]++
			}
		}
	}
	return out
}

// FreeDevices is how many devices of node's own, of the classes named, no taint keeps
// new claims off and no ResourceClaim shown has allocated (an assumed allocation
// counts). Placement ranks nodes by it for members that ask for devices, the tightest
// first: the devices of other classes a node has (another driver's NICs) or the ones
// drained make it no emptier. A device of two of the classes counts for each.
func FreeDevices(objs *cluster.Objects, node string, classes []corev1.ResourceName) int64 {
	if len(classes) == 0 || len(objs.Slices) == 0 || len(objs.DeviceClasses) == 0 {
		return 0
	}
	idx := classIndexOf(objs)
	total := idx.total[node]
	if len(total) == 0 {
		return 0
	}
	claimed := objs.OfObjects("kubefit.claimed", func() any { return idx.claimed(objs) }).(map[nodeClass]int64)
	var n int64
	for _, c := range classes {
		n += total[c] - claimed[nodeClass{node, c}]
	}
	return n
}

// DeviceClassesOf names, sorted, the DeviceClasses the requests of pod's
// ResourceClaims (those that exist) name, each alternative's included.
func DeviceClassesOf(snap *cluster.Snapshot, pod *corev1.Pod) []corev1.ResourceName {
	claims, _ := ClaimsOf(snap, pod)
	var out []corev1.ResourceName
	for _, c := range claims {
		for _, class := range requestClasses(c) {
			out = append(out, corev1.ResourceName(class))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
