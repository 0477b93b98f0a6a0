package cluster

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeInfo is one node of a Snapshot: the node object, its allocatable resources in
// canonical units, and the sum of requests of the pods bound to it.
type NodeInfo struct {
	// Node is the node object. Placement reads its labels, taints and conditions.
	Node *corev1.Node
	// Allocatable is the node's allocatable resources, including the "pods" count.
	Allocatable Resources
	// Requested is the sum of PodRequests of the non-terminal pods bound to the node.
	Requested Resources

	ready bool
	// pods are the pods counted in Requested that the snapshot has objects for, bound or
	// assumed, by key; generation changes with every change of the node, so that views
	// built over it (the hosted kube-scheduler filters) know when to rebuild theirs.
	pods       map[string]*corev1.Pod
	generation uint64
	// free is Allocatable less Requested by ResourceID of the snapshot, kept with them;
	// ids numbered since the node last changed are beyond its end, and free none.
	free []int64
}

// Pods returns the pods counted on the node that the snapshot has objects for, bound or
// assumed by a placement, by key. The map is owned by the snapshot.
func (n *NodeInfo) Pods() map[string]*corev1.Pod { return n.pods }

// Generation changes whenever the node's object, its pods or its requests change.
func (n *NodeInfo) Generation() uint64 { return n.generation }

// Name returns the node's name.
func (n *NodeInfo) Name() string { return n.Node.Name }

// Free returns how much of resource name is not yet requested on the node.
func (n *NodeInfo) Free(name corev1.ResourceName) int64 {
	return n.Allocatable[name] - n.Requested[name]
}

// Ready reports whether the node's Ready condition is True.
func (n *NodeInfo) Ready() bool { return n.ready }

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// FitsVector is Fits for a request given as parallel slices of names and amounts, which
// callers that test one request against many nodes precompute.
func (n *NodeInfo) FitsVector(names []corev1.ResourceName, needs []int64) int {
	count := int64(1<<31 - 1)
	for i, name := range names {
		free := n.Allocatable[name] - n.Requested[name]
		if free < needs[i] {
			return 0
		}
		count = min(count, free/needs[i])
	}
	return int(count)
}

// Fits reports how many copies of req fit in the node's free resources right now.
// A request naming a resource the node does not have fits zero times; an empty request
// fits without bound and reports max int.
func (n *NodeInfo) Fits(req Resources) int {
	count := int64(1<<62 - 1)
	for name, need := range req {
		if need <= 0 {
			continue
		}
		free := n.Free(name)
		if free < need {
			return 0
		}
		count = min(count, free/need)
	}
	return int(min(count, 1<<31-1))
}

// Snapshot is a mutable, point-in-time view of the cluster. Placement assumes pods onto it
// tentatively and reverts what it does not keep. It is not safe for concurrent use.
type Snapshot struct {
	nodes  []*NodeInfo // sorted by name
	byName map[string]*NodeInfo
	// ids numbers the resource names of the nodes' free vectors; copies share it.
	ids *resourceIDs
	// bound records, for each pod key (namespace/name) counted in Requested, where and how
	// much, so that removing a pod is exact.
	bound map[string]boundPod
	// indexes order the nodes by free amount of a resource, built on first use by
	// ByFree and kept current by every change of a node's resources.
	indexes []*freeIndex
	// affinity counts the pods with required pod anti-affinity counted on nodes: their
	// terms can reject any pod, so placement checks every member against them.
	antiAffinity int
	// objects holds the namespaces and volume objects placement's filters read; copies
	// share it.
	storage *Objects
	// ext is a view a placement package keeps over the snapshot (the hosted filters'
	// node infos); the snapshot only carries it, and drops it in copies.
	ext any
	// filters is what evaluates placement's filters on the snapshot and its copies (the
	// hosted kube-scheduler plugins with the configured arguments); the snapshot only
	// carries it.
	filters any
	// layout counts the changes of the node set and of node objects: what an empty
	// cluster is made of besides Objects.
	layout uint64
	// empty is the view Empty returned, kept while layout and the objects' generation are
	// those it was made at.
	empty *emptyView
	// surveys is the memo Surveys returns, kept while layout is surveysLayout.
	surveys       map[any]any
	surveysLayout uint64
	// allocatable is the memo Allocatable returns, kept while layout is
	// allocatableLayout.
	allocatable       Resources
	allocatableLayout uint64
}

// emptyView is the snapshot's empty cluster, with what placement learnt of it.
type emptyView struct {
	snap            *Snapshot
	layout, objects uint64
	fits            map[string]int
}

type boundPod struct {
	node     string
	requests Resources
	pod      *corev1.Pod
}

// New builds a snapshot from nodes and pods. Pods that are bound (spec.nodeName set) and not
// terminal (Succeeded or Failed) count against their node; pods on unknown nodes are ignored.
func New(nodes []*corev1.Node, pods []*corev1.Pod) *Snapshot {
	s := &Snapshot{
		byName:  make(map[string]*NodeInfo, len(nodes)),
		bound:   make(map[string]boundPod, len(pods)),
		storage: &Objects{},
		ids:     newResourceIDs(),
	}
	for _, n := range nodes {
		s.SetNode(n)
	}
	for _, p := range pods {
		s.AddPod(p)
	}
	return s
}

// Nodes returns the nodes sorted by name. The slice is owned by the snapshot.
func (s *Snapshot) Nodes() []*NodeInfo { return s.nodes }

// Layout counts the changes of the snapshot's node set and node objects: what a node
// admits by its labels and taints stays the same while it does.
func (s *Snapshot) Layout() uint64 { return s.layout }

// Node returns the named node, or nil.
func (s *Snapshot) Node(name string) *NodeInfo { return s.byName[name] }

// Len returns the number of nodes.
func (s *Snapshot) Len() int { return len(s.nodes) }

// SetNode adds a node or replaces its object, keeping what is bound to it.
func (s *Snapshot) SetNode(n *corev1.Node) {
	s.layout++
	if info, ok := s.byName[n.Name]; ok {
		s.change(info, func() {
			info.Node = n
			info.Allocatable = FromList(n.Status.Allocatable)
			info.ready = nodeReady(n)
			info.refree(s.ids)
		})
		return
	}
	info := &NodeInfo{Node: n, Allocatable: FromList(n.Status.Allocatable), Requested: Resources{}, ready: nodeReady(n),
		pods: map[string]*corev1.Pod{}, generation: 1}
	i, _ := slices.BinarySearchFunc(s.nodes, n.Name, byName)
	s.nodes = slices.Insert(s.nodes, i, info)
	s.byName[n.Name] = info
	for key, b := range s.bound {
		if b.node == n.Name {
			info.Requested.Add(b.requests)
			if b.pod != nil {
				info.pods[key] = b.pod
			}
		}
	}
	info.refree(s.ids)
	for _, x := range s.indexes {
		x.add(info)
	}
}

// RemoveNode removes a node. Pods bound to it stay recorded and count again if the node
// comes back.
func (s *Snapshot) RemoveNode(name string) {
	info, ok := s.byName[name]
	if !ok {
		return
	}
	s.layout++
	for _, x := range s.indexes {
		x.remove(info)
	}
	delete(s.byName, name)
	s.nodes = slices.DeleteFunc(s.nodes, func(n *NodeInfo) bool { return n.Name() == name })
}

// PodKey returns the key a snapshot uses for a pod: namespace/name.
func PodKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// AddPod records a pod if it is bound and not terminal; it replaces an earlier record of the
// same pod. It reports whether the pod now counts against a node.
func (s *Snapshot) AddPod(p *corev1.Pod) bool {
	return s.AddPodRequests(PodKey(p), p, nil)
}

// AddPodRequests is AddPod with the pod's key (PodKey) and its requests as PodRequests
// computes them, for callers that have them already; nil requests computes them. The
// engine adds a pod on each of its versions: its key made once spares a string.
func (s *Snapshot) AddPodRequests(key string, p *corev1.Pod, requests Resources) bool {
	s.RemovePod(key)
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if requests == nil {
		requests = PodRequests(p)
	}
	b := boundPod{node: p.Spec.NodeName, requests: requests, pod: p}
	s.bound[key] = b
	if RequiresAntiAffinity(p) {
		s.antiAffinity++
	}
	if info := s.byName[b.node]; info != nil {
		s.change(info, func() {
			info.request(s.ids, b.requests, 1)
			info.pods[key] = p
		})
	}
	return true
}

// RemovePod forgets a pod by key.
func (s *Snapshot) RemovePod(key string) {
	b, ok := s.bound[key]
	if !ok {
		return
	}
	delete(s.bound, key)
	if RequiresAntiAffinity(b.pod) {
		s.antiAffinity--
	}
	if info := s.byName[b.node]; info != nil {
		s.change(info, func() {
			info.request(s.ids, b.requests, -1)
			delete(info.pods, key)
		})
	}
}

// Assume counts req against node n, which must belong to this snapshot, until the
// returned revert function is called. It is how placement makes tentative assignments;
// reverts must run last in, first out.
func (s *Snapshot) Assume(n *NodeInfo, req Resources) (revert func()) {
	s.change(n, func() { n.request(s.ids, req, 1) })
	return func() { s.change(n, func() { n.request(s.ids, req, -1) }) }
}

// AssumePod is Assume for a pod the snapshot should see on the node until the revert, as
// the hosted filters need (its ports, labels, affinity and volumes count for the members
// placed after it). key names it among the node's pods; pod is not modified.
func (s *Snapshot) AssumePod(n *NodeInfo, key string, pod *corev1.Pod, req Resources) (revert func()) {
	cp := pod.DeepCopy()
	cp.Spec.NodeName = n.Name()
	if cp.UID == "" {
		// kube-scheduler's node infos key pods by UID; a pod not created yet has none.
		cp.UID = types.UID("assumed/" + key)
	}
	anti := RequiresAntiAffinity(cp)
	s.change(n, func() {
		n.request(s.ids, req, 1)
		n.pods[key] = cp
	})
	if anti {
		s.antiAffinity++
	}
	return func() {
		if anti {
			s.antiAffinity--
		}
		s.change(n, func() {
			n.request(s.ids, req, -1)
			delete(n.pods, key)
		})
	}
}

// HasRequiredAntiAffinity reports whether any pod counted on a node has required pod
// anti-affinity, which may keep any other pod off some nodes.
func (s *Snapshot) HasRequiredAntiAffinity() bool { return s.antiAffinity > 0 }

// RequiresAntiAffinity reports whether p has required pod anti-affinity terms.
func RequiresAntiAffinity(p *corev1.Pod) bool {
	if p == nil || p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return false
	}
	return len(p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// Bind records a pod as bound to node, as AddPod would once the binding is observed.
// The engine uses it to keep its snapshot current between observations.
func (s *Snapshot) Bind(p *corev1.Pod, node string) {
	s.BindRequests(PodKey(p), p, node, nil)
}

// BindRequests is Bind with the pod's key and requests (see AddPodRequests).
func (s *Snapshot) BindRequests(key string, p *corev1.Pod, node string, requests Resources) {
	cp := *p
	cp.Spec.NodeName = node
	s.AddPodRequests(key, &cp, requests)
}

// Clone returns a deep copy of the snapshot's accounting; node objects are shared, since
// the snapshot never mutates them.
func (s *Snapshot) Clone() *Snapshot {
	c := &Snapshot{
		nodes:        make([]*NodeInfo, len(s.nodes)),
		byName:       make(map[string]*NodeInfo, len(s.nodes)),
		bound:        make(map[string]boundPod, len(s.bound)),
		antiAffinity: s.antiAffinity,
		storage:      s.storage,
		filters:      s.filters,
		ids:          s.ids,
	}
	for i, n := range s.nodes {
		cp := &NodeInfo{Node: n.Node, Allocatable: n.Allocatable, Requested: n.Requested.Clone(), ready: n.ready,
			pods: maps.Clone(n.pods), generation: 1, free: slices.Clone(n.free)}
		c.nodes[i] = cp
		c.byName[cp.Name()] = cp
	}
	for k, v := range s.bound {
		c.bound[k] = v
	}
	return c
}

// Empty returns a copy of the snapshot's nodes with nothing bound: the cluster as it would
// be if every pod finished. Placement uses it to tell Impossible from Unschedulable.
//
// The copy is kept and returned again until a node is set or removed or the objects
// change, so a caller must revert whatever it assumes on it.
func (s *Snapshot) Empty() *Snapshot {
	if e := s.empty; e != nil && e.layout == s.layout && e.objects == s.storage.generation {
		return e.snap
	}
	c := &Snapshot{
		nodes:   make([]*NodeInfo, len(s.nodes)),
		byName:  make(map[string]*NodeInfo, len(s.nodes)),
		bound:   map[string]boundPod{},
		storage: s.storage.unallocated(),
		filters: s.filters,
		ids:     s.ids,
	}
	for i, n := range s.nodes {
		cp := &NodeInfo{Node: n.Node, Allocatable: n.Allocatable, Requested: Resources{}, ready: n.ready,
			pods: map[string]*corev1.Pod{}, generation: 1}
		cp.refree(c.ids)
		c.nodes[i] = cp
		c.byName[cp.Name()] = cp
	}
	s.empty = &emptyView{snap: c, layout: s.layout, objects: s.storage.generation, fits: map[string]int{}}
	return c
}

// EmptyFits is a memo for placement, kept with the snapshot Empty returns and dropped
// with it: how many members of a group, by a key that names everything placement reads
// of it, an empty cluster takes.
func (s *Snapshot) EmptyFits() map[string]int {
	s.Empty()
	return s.empty.fits
}

// Surveys is a memo for placement, kept with the snapshot (not its copies) by keys of
// placement's own (comparable values of its types): what it found of each node for a kind of pod, to find again only on
// the nodes whose Generation changed since. It is emptied whenever a node is added,
// removed or has its object replaced, so that an entry's nodes are the snapshot's, in
// order.
func (s *Snapshot) Surveys() map[any]any {
	if s.surveys == nil || s.surveysLayout != s.layout {
		s.surveys, s.surveysLayout = map[any]any{}, s.layout
	}
	return s.surveys
}

// Allocatable returns the sum of the nodes' allocatable, kept while no node is added,
// removed or has its object replaced: a queue orders its queues by their share of it on
// every pass. The result is shared: callers must not modify it.
func (s *Snapshot) Allocatable() Resources {
	if s.allocatable == nil || s.allocatableLayout != s.layout {
		total := Resources{}
		for _, n := range s.nodes {
			total.Add(n.Allocatable)
		}
		s.allocatable, s.allocatableLayout = total, s.layout
	}
	return s.allocatable
}

// Usage returns the non-zero requested resources of every node, for tests and metrics.
func (s *Snapshot) Usage() map[string]Resources {
	out := make(map[string]Resources, len(s.nodes))
	for _, n := range s.nodes {
		used := Resources{}
		for k, v := range n.Requested {
			if v != 0 {
				used[k] = v
			}
		}
		out[n.Name()] = used
	}
	return out
}

// Bound reports whether the pod with key counts against a node.
func (s *Snapshot) Bound(key string) bool {
	_, ok := s.bound[key]
	return ok
}

// Ext returns the view a placement package keeps over the snapshot, or nil.
func (s *Snapshot) Ext() any { return s.ext }

// SetExt sets the view a placement package keeps over the snapshot. Copies do not have it.
func (s *Snapshot) SetExt(v any) { s.ext = v }

// Filters returns what evaluates placement's filters on the snapshot, or nil.
func (s *Snapshot) Filters() any { return s.filters }

// SetFilters sets what evaluates placement's filters on the snapshot and its copies.
func (s *Snapshot) SetFilters(f any) { s.filters = f }
