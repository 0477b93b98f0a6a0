package cluster

import resourcev1 "k8s.io/api/resource/v1"

// deviceIndex is what the ResourceSlices say of the nodes' devices, as of one
// DevicesGeneration: the node of each device of a single node, and how many such devices
// each node has, in the newest generation of each pool.
type deviceIndex struct {
	gen   uint64
	node  map[deviceID]string
	total map[string]int64
}

// deviceID names a device as an allocation result does.
type deviceID struct{ driver, pool, device string }

// allocatedIndex counts, by node, the devices allocated to the ResourceClaims shown, as
// of one Generation.
type allocatedIndex struct {
	gen   uint64
	count map[string]int64
}

// FreeDevicesOn is how many devices of node's own that no ResourceClaim shown has
// allocated (an assumed allocation counts) the ResourceSlices publish, whatever their
// class; placement ranks nodes by it for members that ask for devices, the tightest
// first. Tainted devices count as free.
func (st *Objects) FreeDevicesOn(node string) int64 {
	idx := st.devicesIndex()
	if idx.total[node] == 0 {
		return 0
	}
	if st.allocated.count == nil || st.allocated.gen != st.generation {
		st.allocated = allocatedIndex{gen: st.generation, count: map[string]int64{}}
		for _, c := range st.ResourceClaims {
			if a := c.Status.Allocation; a != nil {
				for _, r := range a.Devices.Results {
					if n := idx.node[deviceID{r.Driver, r.Pool, r.Device}]; n != "" {
						st.allocated.count[n]++
					}
				}
			}
		}
	}
	return idx.total[node] - st.allocated.count[node]
}

// devicesIndex returns the index of the devices of the slices as they are now.
func (st *Objects) devicesIndex() *deviceIndex {
	if st.index != nil && st.index.gen == st.devices {
		return st.index
	}
	newest := NewestPools(st.Slices)
	idx := &deviceIndex{gen: st.devices, node: map[deviceID]string{}, total: map[string]int64{}}
	for _, s := range st.Slices {
		if s.Spec.Pool.Generation != newest[PoolOf(s)] {
			continue
		}
		for i := range s.Spec.Devices {
			if n := DeviceNode(s, &s.Spec.Devices[i]); n != "" {
				idx.node[deviceID{s.Spec.Driver, s.Spec.Pool.Name, s.Spec.Devices[i].Name}] = n
				idx.total[n]++
			}
		}
	}
	st.index = idx
	return idx
}

// PoolKey names a pool of ResourceSlices: its driver and pool name.
type PoolKey struct{ Driver, Pool string }

// PoolOf is the pool slice s belongs to.
func PoolOf(s *resourcev1.ResourceSlice) PoolKey { return PoolKey{s.Spec.Driver, s.Spec.Pool.Name} }

// NewestPools returns each pool's newest generation among slices: only the slices of
// that generation say what the pool's devices are.
func NewestPools(slices map[string]*resourcev1.ResourceSlice) map[PoolKey]int64 {
	out := map[PoolKey]int64{}
	for _, s := range slices {
		k := PoolOf(s)
		out[k] = max(out[k], s.Spec.Pool.Generation)
	}
	return out
}

// DeviceNode is the node device d of slice s is on, or "" when it is not a single
// node's (network-attached devices, selected by a node selector or for all nodes).
func DeviceNode(s *resourcev1.ResourceSlice, d *resourcev1.Device) string {
	switch {
	case s.Spec.NodeName != nil:
		return *s.Spec.NodeName
	case d.NodeName != nil:
		return *d.NodeName
	}
	return ""
}
