package cluster

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// freeIndex orders the nodes that have some of one resource by how much of it they have
// free, then by name: the order in which placement tries nodes for members that need the
// resource, tightest first. With it, placing a gang of eight on a thousand nodes visits
// the few nodes it takes rather than all of them.
type freeIndex struct {
	name corev1.ResourceName
	id   ResourceID
	// amounts are the free amounts some indexed node has, ascending.
	amounts []int64
	// nodes holds the indexed nodes by free amount, each list sorted by name.
	nodes map[int64][]*NodeInfo
	// spare holds the storage of lists emptied, for the next amount to need a list: a
	// placement that assumes members on a node and reverts them empties a list and
	// needs one again, twice.
	spare [][]*NodeInfo
}

// maxSpare bounds the emptied lists an index keeps for reuse.
const maxSpare = 8

func newFreeIndex(name corev1.ResourceName, id ResourceID, nodes []*NodeInfo) *freeIndex {
	x := &freeIndex{name: name, id: id, nodes: map[int64][]*NodeInfo{}}
	for _, n := range nodes {
		x.add(n)
	}
	return x
}

// add indexes n under its free amount now. Nodes without the resource are left out: they
// can never take a member that needs it.
func (x *freeIndex) add(n *NodeInfo) {
	if n.Allocatable[x.name] <= 0 {
		return
	}
	free := n.FreeOf(x.id)
	list, ok := x.nodes[free]
	if !ok {
		i, _ := slices.BinarySearch(x.amounts, free)
		x.amounts = slices.Insert(x.amounts, i, free)
		if k := len(x.spare); k > 0 {
			list, x.spare = x.spare[k-1], x.spare[:k-1]
		}
	}
	i, _ := slices.BinarySearchFunc(list, n.Name(), byName)
	x.nodes[free] = slices.Insert(list, i, n)
}

// remove takes n out of the index; its resources must be as they were when it was added.
func (x *freeIndex) remove(n *NodeInfo) {
	if n.Allocatable[x.name] <= 0 {
		return
	}
	free := n.FreeOf(x.id)
	list := x.nodes[free]
	i, found := slices.BinarySearchFunc(list, n.Name(), byName)
	if !found {
		return
	}
	list = slices.Delete(list, i, i+1)
	if len(list) > 0 {
		x.nodes[free] = list
		return
	}
	delete(x.nodes, free)
	if len(x.spare) < maxSpare {
		x.spare = append(x.spare, list)
	}
	if j, ok := slices.BinarySearch(x.amounts, free); ok {
		x.amounts = slices.Delete(x.amounts, j, j+1)
	}
}

func byName(n *NodeInfo, name string) int { return strings.Compare(n.Name(), name) }

// ByFree calls visit on the nodes that have at least atLeast of resource name free, the
// least free first and by name among equals, until visit returns false. visit must not
// change the snapshot. The first call for a resource indexes the nodes by it; the
// snapshot keeps the index current from then on.
func (s *Snapshot) ByFree(name corev1.ResourceName, atLeast int64, visit func(*NodeInfo) bool) {
	x := s.index(name)
	i, _ := slices.BinarySearch(x.amounts, atLeast)
	for _, free := range x.amounts[i:] {
		for _, n := range x.nodes[free] {
			if !visit(n) {
				return
			}
		}
	}
}

func (s *Snapshot) index(name corev1.ResourceName) *freeIndex {
	for _, x := range s.indexes {
		if x.name == name {
			return x
		}
	}
	x := newFreeIndex(name, s.ids.id(name), s.nodes)
	s.indexes = append(s.indexes, x)
	return x
}

// change applies a change of n's resources, keeping the indexes current. A node no
// longer in the snapshot (an assumption reverted after its node was removed) is changed
// and stays out of the indexes.
func (s *Snapshot) change(n *NodeInfo, apply func()) {
	n.generation++
	if len(s.indexes) == 0 || s.byName[n.Name()] != n {
		apply()
		return
	}
	for _, x := range s.indexes {
		x.remove(n)
	}
	apply()
	for _, x := range s.indexes {
		x.add(n)
	}
}
