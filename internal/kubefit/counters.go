package kubefit

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// A partitionable device (a MIG partition of a GPU) consumes counters that its pool
// shares among its devices (a ResourceSlice's sharedCounters: the GPU's memory slices).
// The allocator gives a claim such a device only if what the devices already allocated
// consumed leaves enough of each counter it consumes; so of a GPU's seven 1g partitions,
// none is free once its 7g partition is allocated. Counting such devices one by one, as
// the others are, counts partitions that cannot be allocated together: the counts below
// bound them by their counters.

// counter is one counter of a pool's shared counter set.
type counter struct {
	pool cluster.PoolKey
	set  string
	name string
}

// consumption is what a device consumes of its pool's counters, in thousandths (a
// counter is a quantity, and may be fractional).
type consumption map[counter]int64

// consumptionOf returns what device d of slice s consumes, nil when it consumes no
// counter.
func consumptionOf(s *resourcev1.ResourceSlice, d *resourcev1.Device) consumption {
	var out consumption
	for _, c := range d.ConsumesCounters {
		for name, v := range c.Counters {
			if out == nil {
				out = consumption{}
			}
			out[counter{cluster.PoolOf(s), c.CounterSet, name}] += v.Value.MilliValue()
		}
	}
	return out
}

// sharedCounters returns every counter of the pools' shared counter sets, in the newest
// generation of each pool, with its value.
func sharedCounters(objs *cluster.Objects, newest map[cluster.PoolKey]int64) map[counter]int64 {
	var out map[counter]int64
	for _, s := range objs.Slices {
		if len(s.Spec.SharedCounters) == 0 || s.Spec.Pool.Generation != newest[cluster.PoolOf(s)] {
			continue
		}
		for _, set := range s.Spec.SharedCounters {
			for name, v := range set.Counters {
				if out == nil {
					out = map[counter]int64{}
				}
				out[counter{cluster.PoolOf(s), set.Name, name}] = v.Value.MilliValue()
			}
		}
	}
	return out
}

// mostTogether bounds how many of devices may be allocated together when left is what
// is left of each counter. Devices that share no counter, even through others (the
// partitions of two GPUs), are counted apart and the counts added; among those that do,
// for each counter, as many of the devices that consume it as fit in what is left of it,
// the smallest first, with all the others; the fewest of those over the counters. It is
// exact when the devices that share counters consume alike (the partitions of one
// profile); otherwise it may count more than fit, never fewer. A counter no shared set
// defines has nothing left.
func mostTogether(devices []consumption, left map[counter]int64) int64 {
	var n int64
	for _, part := range apart(devices) {
		n += mostSharing(part, left)
	}
	return n
}

// apart splits devices into the parts that share counters, through one another.
func apart(devices []consumption) [][]consumption {
	root := make([]int, len(devices))
	var find func(int) int
	find = func(i int) int {
		if root[i] != i {
			root[i] = find(root[i])
		}
		return root[i]
	}
	first := map[counter]int{} // the first device that consumes each counter
	for i, d := range devices {
		root[i] = i
		for c := range d {
			if j, ok := first[c]; ok {
				root[find(i)] = find(j)
			} else {
				first[c] = i
			}
		}
	}
	byRoot := map[int]int{}
	var out [][]consumption
	for i, d := range devices {
		r := find(i)
		k, ok := byRoot[r]
		if !ok {
			k = len(out)
			byRoot[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], d)
	}
	return out
}

// mostSharing is mostTogether of devices that share counters.
func mostSharing(devices []consumption, left map[counter]int64) int64 {
	most := int64(len(devices))
	var counters []counter
	for _, d := range devices {
		for c := range d {
			if !slices.Contains(counters, c) {
				counters = append(counters, c)
			}
		}
	}
	var sizes []int64
	for _, c := range counters {
		sizes = sizes[:0]
		for _, d := range devices {
			if v, ok := d[c]; ok {
				sizes = append(sizes, v)
			}
		}
		slices.Sort(sizes)
		n, room := int64(len(devices)-len(sizes)), left[c]
		for _, v := range sizes {
			if v > room {
				break
			}
			room -= v
			n++
		}
		most = min(most, n)
	}
	return most
}

// nodeCount is what the partitions allocated on one node leave of its partitions: per
// class, as many as what is left of the counters takes together, and what is left of
// the counters its partitions consume. allocated names the partitions allocated, which
// the count was made for.
type nodeCount struct {
	allocated string
	parts     map[corev1.ResourceName]int64
	left      map[counter]int64
}

// nodeCountOf returns the count of node's partitions with allocated (of that node)
// allocated, the last one made if it was made for the same partitions.
func (idx *classIndex) nodeCountOf(node string, allocated []deviceKey) *nodeCount {
	names := make([]string, len(allocated))
	for i, k := range allocated {
		names[i] = k.driver + "/" + k.pool + "/" + k.device
	}
	slices.Sort(names)
	sig := strings.Join(names, ",")
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if c := idx.counts[node]; c != nil && c.allocated == sig {
		return c
	}
	c := &nodeCount{allocated: sig, parts: map[corev1.ResourceName]int64{}, left: map[counter]int64{}}
	for _, class := range idx.partClasses[node] {
		for _, k := range idx.partitions[nodeClass{node, class}] {
			for ctr := range idx.consumes[k] {
				c.left[ctr] = idx.counters[ctr]
			}
		}
	}
	isAllocated := make(map[deviceKey]bool, len(allocated))
	for _, k := range allocated {
		isAllocated[k] = true
		for ctr, v := range idx.consumes[k] {
			if _, ok := c.left[ctr]; ok {
				c.left[ctr] -= v
			}
		}
	}
	for _, class := range idx.partClasses[node] {
		c.parts[class] = mostTogether(idx.consumptions(idx.partitions[nodeClass{node, class}], isAllocated), c.left)
	}
	if idx.counts == nil {
		idx.counts = map[string]*nodeCount{}
	}
	idx.counts[node] = c
	return c
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
		if n := idx.partNode[k]; fc.nodes[n] != nil && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	var out cluster.Resources
	for _, node := range nodes {
		base := fc.nodes[node]
		left := maps.Clone(base.left)
		for k := range freed {
			for c, v := range idx.consumes[k] {
				if _, ok := left[c]; ok {
					left[c] += v
				}
			}
		}
		for _, class := range idx.partClasses[node] {
			var devices []consumption
			for _, k := range idx.partitions[nodeClass{node, class}] {
				if !fc.allocated[k] || freed[k] {
					devices = append(devices, idx.consumes[k])
				}
			}
			if d := mostTogether(devices, left) - base.parts[class]; d > 0 {
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
		if n := total - fc.nodes[nc.node].parts[nc.class]; n > 0 {
			if held[nc.node] == nil {
				held[nc.node] = cluster.Resources{}
			}
			held[nc.node][nc.class] += n
		}
	}
}
