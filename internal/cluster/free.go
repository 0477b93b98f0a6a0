package cluster

import corev1 "k8s.io/api/core/v1"

// ResourceID numbers a resource name within a snapshot and its copies (Clone, Empty), so
// that placement's loops over nodes read a node's free amounts from a slice rather than
// hashing the name twice per node: a survey of a thousand nodes for a shape of four
// resources did eight thousand string-map lookups.
type ResourceID int

// resourceIDs is the numbering a snapshot and its copies share. It only grows: an id,
// once given, names the same resource for the snapshot's life.
type resourceIDs struct {
	byName map[corev1.ResourceName]ResourceID
	names  []corev1.ResourceName
}

func newResourceIDs() *resourceIDs {
	return &resourceIDs{byName: map[corev1.ResourceName]ResourceID{}}
}

func (r *resourceIDs) id(name corev1.ResourceName) ResourceID {
	if id, ok := r.byName[name]; ok {
		return id
	}
	id := ResourceID(len(r.names))
	r.names = append(r.names, name)
	r.byName[name] = id
	return id
}

// ResourceID returns the id of resource name in s and its copies, numbering it if no
// node or pod named it yet (every node then has none of it free).
func (s *Snapshot) ResourceID(name corev1.ResourceName) ResourceID { return s.ids.id(name) }

// FreeOf is Free for a resource given by its ResourceID in the node's snapshot.
func (n *NodeInfo) FreeOf(id ResourceID) int64 {
	if int(id) < len(n.free) {
		return n.free[id]
	}
	// Numbered after the node last changed, so neither allocatable nor requested here.
	return 0
}

// FitsIDs is FitsVector for resources given by their ResourceIDs in the node's snapshot.
func (n *NodeInfo) FitsIDs(ids []ResourceID, needs []int64) int {
	count := int64(1<<31 - 1)
	for i, id := range ids {
		free := n.FreeOf(id)
		if free < needs[i] {
			return 0
		}
		count = min(count, free/needs[i])
	}
	return int(count)
}

// request adds sign times req to the node's Requested, keeping its free vector current.
func (n *NodeInfo) request(ids *resourceIDs, req Resources, sign int64) {
	for name, v := range req {
		n.Requested[name] += sign * v
		id := n.grow(ids.id(name))
		n.free[id] -= sign * v
	}
}

// refree computes the node's free vector again from Allocatable and Requested, after its
// allocatable changed or for a new copy.
func (n *NodeInfo) refree(ids *resourceIDs) {
	clear(n.free)
	for name, v := range n.Allocatable {
		id := n.grow(ids.id(name))
		n.free[id] += v
	}
	for name, v := range n.Requested {
		id := n.grow(ids.id(name))
		n.free[id] -= v
	}
}

// grow makes the free vector long enough to hold id, and returns id.
func (n *NodeInfo) grow(id ResourceID) ResourceID {
	if k := int(id) + 1 - len(n.free); k > 0 {
		n.free = append(n.free, make([]int64, k)...)
	}
	return id
}
