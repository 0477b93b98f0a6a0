package kubefit

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/muster-sched/muster/internal/cluster"
)

// classIndex is what FreeDevices, ClaimedDevices and OwnDevices read of the devices:
// each device of a single node that no taint keeps new claims off, with its node and
// the DeviceClasses that select it, and each node's count of them per class,
// partitions bounded by their counters (counters.go). It is kept on the objects while
// the devices stay (cluster.Objects.OfDevices).
type classIndex struct {
	devices map[deviceKey]classedDevice
	total   map[string]cluster.Resources
	// plain counts, per node and class, the devices that consume no counter; partitions
	// lists those that do, partsTotal counts as many of them as the counters take
	// together, and partClasses names, per node, the classes with partitions there.
	plain       map[nodeClass]int64
	partitions  map[nodeClass][]deviceKey
	partsTotal  map[nodeClass]int64
	partClasses map[string][]corev1.ResourceName
	// partNode is the node of each device that consumes counters, a tainted one's too.
	partNode map[deviceKey]string
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
		plain: map[nodeClass]int64{}, partitions: map[nodeClass][]deviceKey{}, partsTotal: map[nodeClass]int64{},
		partClasses: map[string][]corev1.ResourceName{}, partNode: map[deviceKey]string{}, consumes: map[deviceKey]consumption{}}
	newest := cluster.NewestPools(objs.Slices)
	idx.counters = sharedCounters(objs, newest)
	for _, s := range objs.Slices {
		if s.Spec.Pool.Generation != newest[cluster.PoolOf(s)] {
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if c := consumptionOf(s, d); c != nil {
				key := deviceKey{s.Spec.Driver, s.Spec.Pool.Name, d.Name}
				idx.consumes[key], idx.partNode[key] = c, cluster.DeviceNode(s, d)
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
		n := mostTogether(idx.consumptions(keys, nil), idx.counters)
		idx.partsTotal[nc] = n
		idx.partClasses[nc.node] = append(idx.partClasses[nc.node], nc.class)
		add(nc, n)
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

// freeCount is what the ResourceClaims leave of a classIndex's devices: per node and
// class, the devices no claim has allocated, and of the partitions only as many as the
// counters left take together (mostTogether); parts counts those partitions; allocated
// are the partitions allocated, and left what they leave of the counters. A device
// counts for every class that selects it, whatever the class of the request it was
// allocated for.
type freeCount struct {
	byClass, parts map[nodeClass]int64
	allocated      map[deviceKey]bool
	left           map[counter]int64
}

// freeOf returns the freeCount of objs's claims, made once per version of the objects.
func (idx *classIndex) freeOf(objs *cluster.Objects) *freeCount {
	return objs.OfObjects("kubefit.free", func() any { return idx.count(objs) }).(*freeCount)
}

// count makes the freeCount of objs's claims.
func (idx *classIndex) count(objs *cluster.Objects) *freeCount {
	fc := &freeCount{byClass: make(map[nodeClass]int64, len(idx.plain)+len(idx.partitions)),
		parts: make(map[nodeClass]int64, len(idx.partitions)), allocated: map[deviceKey]bool{}}
	for nc, n := range idx.plain {
		fc.byClass[nc] = n
	}
	for _, c := range objs.ResourceClaims {
		a := c.Status.Allocation
		if a == nil {
			continue
		}
		for _, res := range a.Devices.Results {
			key := deviceKey{res.Driver, res.Pool, res.Device}
			if idx.consumes[key] != nil {
				fc.allocated[key] = true
				continue
			}
			if d, ok := idx.devices[key]; ok {
				for _, class := range d.classes {
					fc.byClass[nodeClass{d.node, class}]--
				}
			}
		}
	}
	if len(idx.partitions) == 0 {
		return fc
	}
	fc.left = maps.Clone(idx.counters)
	for key := range fc.allocated {
		for c, v := range idx.consumes[key] {
			fc.left[c] -= v
		}
	}
	for nc, keys := range idx.partitions {
		n := mostTogether(idx.consumptions(keys, fc.allocated), fc.left)
		fc.parts[nc] = n
		fc.byClass[nc] += n
	}
	return fc
}

// freedBy is, per class, how many more partitions the counters take once partitions
// keys, allocated, are not: what a member that holds them gives back to every class
// whose partitions share their counters (a 3g partition, three 1g). It reads only the
// partitions and counters of the keys' nodes.
func (idx *classIndex) freedBy(objs *cluster.Objects, keys []deviceKey) cluster.Resources {
	fc := idx.freeOf(objs)
	freed := map[deviceKey]bool{}
	var nodes []string
	for _, k := range keys {
		if !fc.allocated[k] || freed[k] {
			continue
		}
		freed[k] = true
		if n := idx.partNode[k]; n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	var out cluster.Resources
	for _, node := range nodes {
		// What is left of the counters the node's partitions consume, with what the
		// freed ones give back.
		left := map[counter]int64{}
		for _, class := range idx.partClasses[node] {
			for _, k := range idx.partitions[nodeClass{node, class}] {
				for c := range idx.consumes[k] {
					left[c] = fc.left[c]
				}
			}
		}
		for k := range freed {
			for c, v := range idx.consumes[k] {
				if _, ok := left[c]; ok {
					left[c] += v
				}
			}
		}
		for _, class := range idx.partClasses[node] {
			nc := nodeClass{node, class}
			var devices []consumption
			for _, k := range idx.partitions[nc] {
				if !fc.allocated[k] || freed[k] {
					devices = append(devices, idx.consumes[k])
				}
			}
			if d := mostTogether(devices, left) - fc.parts[nc]; d > 0 {
				if out == nil {
					out = cluster.Resources{}
				}
				out[class] += d
			}
		}
	}
	return out
}

// partitionsHeld adds to held, per node and class, the partitions that the claims of
// objs keep from being allocated: those allocated and those their counters shut out.
func (idx *classIndex) partitionsHeld(objs *cluster.Objects, held map[string]cluster.Resources) {
	fc := idx.freeOf(objs)
	for nc, total := range idx.partsTotal {
		if n := total - fc.parts[nc]; n > 0 {
			if held[nc.node] == nil {
				held[nc.node] = cluster.Resources{}
			}
			held[nc.node][nc.class] += n
		}
	}
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
	free := idx.freeOf(objs).byClass
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
