package cluster

import resourcev1 "k8s.io/api/resource/v1"

// memo is a value another package derived from the objects, and the generation it was
// derived at.
type memo struct {
	gen   uint64
	value any
}

// memoOf returns what derive derives, kept in memos under key while gen stays.
func memoOf(memos *map[string]memo, key string, gen uint64, derive func() any) any {
	if m, ok := (*memos)[key]; ok && m.gen == gen {
		return m.value
	}
	if *memos == nil {
		*memos = map[string]memo{}
	}
	v := derive()
	(*memos)[key] = memo{gen: gen, value: v}
	return v
}

// OfDevices returns what derive derives from the ResourceSlices, DeviceClasses and
// DeviceTaintRules, kept under key while DevicesGeneration stays: for what another
// package derives from them alone (kubefit's devices of each class per node, which
// take the classes' CEL selectors). key names the value: one key, one kind of value.
func (st *Objects) OfDevices(key string, derive func() any) any {
	return memoOf(&st.ofDevices, key, st.devices, derive)
}

// OfObjects is OfDevices for what is derived from any of the objects (kubefit's
// devices that ResourceClaims hold), kept while Generation stays.
func (st *Objects) OfObjects(key string, derive func() any) any {
	return memoOf(&st.ofObjects, key, st.generation, derive)
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
