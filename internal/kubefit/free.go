package kubefit

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
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
	// tainted lists, per node and class, the devices that consume no counter and that a
	// taint keeps claims off unless they tolerate it, with those taints.
	tainted map[nodeClass][]taintedDevice
	// partNode is the node of each device that consumes counters, a tainted one's too.
	partNode map[deviceKey]string
	// counts keeps the last count of each node's partitions (nodeCountOf): most
	// versions of the claims change the allocations of a few nodes.
	mu     sync.Mutex
	counts map[string]*nodeCount
	// consumes holds what each device of the pools' newest generations consumes of the
	// shared counters, a tainted one's too (allocated, it still consumes them), and
	// counters the counters' values.
	consumes map[deviceKey]consumption
	counters map[counter]int64
}

// taintedDevice is a tainted device and its taints that keep new claims off.
type taintedDevice struct {
	key    deviceKey
	taints []resourcev1.DeviceTaint
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
		partClasses: map[string][]corev1.ResourceName{}, partNode: map[deviceKey]string{}, consumes: map[deviceKey]consumption{},
		tainted: map[nodeClass][]taintedDevice{}}
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
	eachNodeDeviceTainted(objs, true, func(node string, key deviceKey, d dracel.Device, taints []resourcev1.DeviceTaint) {
		if len(taints) > 0 && idx.consumes[key] != nil {
			return // a tainted partition counts for no claim
		}
		var classes []corev1.ResourceName
		for name, class := range objs.DeviceClasses {
			if selectsAll(ctx, class.Spec.Selectors, d) {
				classes = append(classes, corev1.ResourceName(name))
			}
		}
		if len(classes) == 0 {
			return
		}
		if len(taints) > 0 {
			for _, c := range classes {
				nc := nodeClass{node, c}
				idx.tainted[nc] = append(idx.tainted[nc], taintedDevice{key, taints})
			}
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
// counters left take together (mostTogether). A device counts for every class that
// selects it, whatever the class of the request it was allocated for. allocated are
// the partitions allocated, and nodes the count of each node with partitions.
type freeCount struct {
	byClass   map[nodeClass]int64
	allocated map[deviceKey]bool
	nodes     map[string]*nodeCount
	// taintedAllocated holds the allocated devices the index does not count as free:
	// the tainted ones (allocated to claims that tolerate their taints, or before they
	// were tainted), and any of no class or of no single node, which FreeDevices never
	// reads.
	taintedAllocated map[deviceKey]bool
}

// freeOf returns the freeCount of objs's claims, made once per version of the objects.
func (idx *classIndex) freeOf(objs *cluster.Objects) *freeCount {
	return objs.OfObjects("kubefit.free", func() any { return idx.count(objs) }).(*freeCount)
}

// count makes the freeCount of objs's claims.
func (idx *classIndex) count(objs *cluster.Objects) *freeCount {
	fc := &freeCount{byClass: make(map[nodeClass]int64, len(idx.plain)+len(idx.partitions)), allocated: map[deviceKey]bool{}}
	for nc, n := range idx.plain {
		fc.byClass[nc] = n
	}
	var onNode map[string][]deviceKey // the partitions allocated, by node
	for _, c := range objs.ResourceClaims {
		a := c.Status.Allocation
		if a == nil {
			continue
		}
		for _, res := range a.Devices.Results {
			key := deviceKey{res.Driver, res.Pool, res.Device}
			if idx.consumes[key] != nil {
				if !fc.allocated[key] {
					fc.allocated[key] = true
					if onNode == nil {
						onNode = map[string][]deviceKey{}
					}
					onNode[idx.partNode[key]] = append(onNode[idx.partNode[key]], key)
				}
				continue
			}
			if d, ok := idx.devices[key]; ok {
				for _, class := range d.classes {
					fc.byClass[nodeClass{d.node, class}]--
				}
			} else if len(idx.tainted) > 0 {
				if fc.taintedAllocated == nil {
					fc.taintedAllocated = map[deviceKey]bool{}
				}
				fc.taintedAllocated[key] = true
			}
		}
	}
	if len(idx.partClasses) == 0 {
		return fc
	}
	fc.nodes = make(map[string]*nodeCount, len(idx.partClasses))
	for node := range idx.partClasses {
		nc := idx.nodeCountOf(node, onNode[node])
		fc.nodes[node] = nc
		for class, n := range nc.parts {
			fc.byClass[nodeClass{node, class}] += n
		}
	}
	return fc
}

// FreeDevices is how many devices of node's own, of the classes named, no taint keeps
// new claims off and no ResourceClaim shown has allocated (an assumed allocation
// counts); partitions of a device (MIG) only as many as its counters leave room for;
// and the tainted devices of a class whose taints tol, the tolerations of the member's
// requests of that class, tolerate. Placement ranks nodes by it for members that ask
// for devices, the tightest first: the devices of other classes a node has (another
// driver's NICs), the ones drained or the partitions a larger one allocated shuts out
// make it no emptier, unless the member tolerates the drain. A device of two of the
// classes counts for each.
func FreeDevices(objs *cluster.Objects, node string, classes []corev1.ResourceName, tol Tolerations) int64 {
	if len(classes) == 0 || len(objs.Slices) == 0 || len(objs.DeviceClasses) == 0 {
		return 0
	}
	idx := classIndexOf(objs)
	if len(idx.total[node]) == 0 && len(tol) == 0 {
		return 0
	}
	fc := idx.freeOf(objs)
	var n int64
	for _, c := range classes {
		n += fc.byClass[nodeClass{node, c}]
		if len(tol[c]) == 0 {
			continue
		}
		for _, d := range idx.tainted[nodeClass{node, c}] {
			if !fc.taintedAllocated[d.key] && tolerated(tol[c], d.taints) {
				n++
			}
		}
	}
	return n
}

// Tolerations are, per DeviceClass, the device tolerations of each request (or
// subrequest) of a pod's claims that names the class and tolerates some taint.
type Tolerations map[corev1.ResourceName][][]resourcev1.DeviceToleration

// DeviceTolerationsOf returns the tolerations of the requests of pod's ResourceClaims
// (those that exist), nil when none tolerates a taint.
func DeviceTolerationsOf(snap *cluster.Snapshot, pod *corev1.Pod) Tolerations {
	claims, _ := ClaimsOf(snap, pod)
	var out Tolerations
	add := func(class string, tols []resourcev1.DeviceToleration) {
		if len(tols) == 0 {
			return
		}
		if out == nil {
			out = Tolerations{}
		}
		out[corev1.ResourceName(class)] = append(out[corev1.ResourceName(class)], tols)
	}
	for _, c := range claims {
		for _, r := range c.Spec.Devices.Requests {
			if r.Exactly != nil {
				add(r.Exactly.DeviceClassName, r.Exactly.Tolerations)
			}
			for _, sr := range r.FirstAvailable {
				add(sr.DeviceClassName, sr.Tolerations)
			}
		}
	}
	return out
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
