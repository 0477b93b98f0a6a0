package kubefit

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/muster-sched/muster/internal/cluster"
)

// classIndex is what FreeDevices reads of the devices: each device of a single node
// that no taint keeps new claims off, with its node and the DeviceClasses that select
// it, and each node's count of them per class, partitions bounded by their counters
// (counters.go). It is kept on the objects while the devices stay
// (cluster.Objects.OfDevices).
type classIndex struct {
	devices map[deviceKey]classedDevice
	total   map[string]cluster.Resources
	// plain counts, per node and class, the devices that consume no counter; partitions
	// lists those that do.
	plain      map[nodeClass]int64
	partitions map[nodeClass][]deviceKey
	// consumes holds what each device of the pools' newest generations consumes of the
	// shared counters, a tainted one's too (allocated, it still consumes them), and
	// counters the counters' values.
	consumes map[deviceKey]consumption
	counters map[counter]int64
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
	idx := &classIndex{devices: map[deviceKey]classedDevice{}, total: map[string]cluster.Resources{},
		plain: map[nodeClass]int64{}, partitions: map[nodeClass][]deviceKey{}, consumes: map[deviceKey]consumption{}}
	newest := cluster.NewestPools(objs.Slices)
	idx.counters = sharedCounters(objs, newest)
	for _, s := range objs.Slices {
		if s.Spec.Pool.Generation != newest[cluster.PoolOf(s)] {
			continue
		}
		for i := range s.Spec.Devices {
			if c := consumptionOf(s, &s.Spec.Devices[i]); c != nil {
				idx.consumes[deviceKey{s.Spec.Driver, s.Spec.Pool.Name, s.Spec.Devices[i].Name}] = c
			}
		}
	}
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
		for _, c := range classes {
			nc := nodeClass{node, c}
			if idx.consumes[key] != nil {
				idx.partitions[nc] = append(idx.partitions[nc], key)
			} else {
				idx.plain[nc]++
			}
		}
	})
	add := func(nc nodeClass, n int64) {
		if n <= 0 {
			return
		}
		if idx.total[nc.node] == nil {
			idx.total[nc.node] = cluster.Resources{}
		}
		idx.total[nc.node][nc.class] += n
	}
	for nc, n := range idx.plain {
		add(nc, n)
	}
	for nc, keys := range idx.partitions {
		add(nc, mostTogether(idx.consumptions(keys, nil), idx.counters))
	}
	return idx
}

// consumptions returns what each device of keys that is not in allocated consumes.
func (idx *classIndex) consumptions(keys []deviceKey, allocated map[deviceKey]bool) []consumption {
	out := make([]consumption, 0, len(keys))
	for _, k := range keys {
		if !allocated[k] {
			out = append(out, idx.consumes[k])
		}
	}
	return out
}

// nodeClass is a node and a DeviceClass.
type nodeClass struct {
	node  string
	class corev1.ResourceName
}

// free counts, per node and class, the devices of idx that the ResourceClaims of objs
// have not allocated: a device counts for every class that selects it, whatever the
// class of the request it was allocated for; and of the partitions, only as many as
// the counters that the allocated devices left can take (mostTogether).
func (idx *classIndex) free(objs *cluster.Objects) map[nodeClass]int64 {
	out := make(map[nodeClass]int64, len(idx.plain)+len(idx.partitions))
	for nc, n := range idx.plain {
		out[nc] = n
	}
	var allocated map[deviceKey]bool
	for _, c := range objs.ResourceClaims {
		a := c.Status.Allocation
		if a == nil {
			continue
		}
		for _, res := range a.Devices.Results {
			key := deviceKey{res.Driver, res.Pool, res.Device}
			if idx.consumes[key] != nil {
				if allocated == nil {
					allocated = map[deviceKey]bool{}
				}
				allocated[key] = true
				continue
			}
			if d, ok := idx.devices[key]; ok {
				for _, class := range d.classes {
					out[nodeClass{d.node, class}]--
				}
			}
		}
	}
	if len(idx.partitions) == 0 {
		return out
	}
	left := maps.Clone(idx.counters)
	for key := range allocated {
		for c, v := range idx.consumes[key] {
			left[c] -= v
		}
	}
	for nc, keys := range idx.partitions {
		out[nc] += mostTogether(idx.consumptions(keys, allocated), left)
	}
	return out
}

// FreeDevices is how many devices of node's own, of the classes named, no taint keeps
// new claims off and no ResourceClaim shown has allocated (an assumed allocation
// counts); partitions of a device (MIG) only as many as its counters leave room for.
// Placement ranks nodes by it for members that ask for devices, the tightest first: the
// devices of other classes a node has (another driver's NICs), the ones drained or the
// partitions a larger one allocated shuts out make it no emptier. A device of two of
// the classes counts for each.
func FreeDevices(objs *cluster.Objects, node string, classes []corev1.ResourceName) int64 {
	if len(classes) == 0 || len(objs.Slices) == 0 || len(objs.DeviceClasses) == 0 {
		return 0
	}
	idx := classIndexOf(objs)
	if len(idx.total[node]) == 0 {
		return 0
	}
	free := objs.OfObjects("kubefit.free", func() any { return idx.free(objs) }).(map[nodeClass]int64)
	var n int64
	for _, c := range classes {
		n += free[nodeClass{node, c}]
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
