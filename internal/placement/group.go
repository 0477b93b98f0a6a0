// Package placement decides, in one step, whether a group of pods can be placed whole on a
// cluster snapshot, and where. It is muster's guarantee in code: a group gets a node for at
// least MinMember members computed on one snapshot, or it gets nothing, and then a
// structured Diagnosis says why (Unschedulable now, or Impossible even on an empty cluster).
//
// Per-pod predicates follow upstream kube-scheduler semantics through
// k8s.io/component-helpers: resource requests (init containers, sidecars, overhead,
// extended resources), nodeSelector and required node affinity, taints and tolerations
// (NoSchedule and NoExecute), unschedulable and NotReady nodes, and the node's pod count.
//
// The package is pure: no client, no clock, no goroutines.
package placement

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
)

// Member is one pod of a group that needs a node.
type Member struct {
	// Name identifies the member in plans and diagnoses (usually namespace/name).
	Name string
	// Pod carries the scheduling constraints: requests, nodeSelector, affinity, tolerations.
	Pod *corev1.Pod
	// Requests, when set, are Pod's requests as cluster.PodRequests computes them, for
	// callers that keep them; placement reads them and never modifies them.
	Requests cluster.Resources
	// Key, when set, is the member's ShapeKey, for callers that place it many times:
	// placement then groups members into shapes without rendering their pods again.
	Key string
	// Task names the part of the job the member belongs to (a Volcano Job's task, a
	// training job's replica type), for Group.TaskMinimums; "" for none.
	Task string
}

// ShapeKey renders everything about a member that placement reads: members with one key
// are placed alike, as one shape. Callers that place a member many times keep it in
// Member.Key.
func ShapeKey(m Member) string { return shapeKey(m.Pod, m.requests()) }

// requests returns the member's resource requests.
func (m Member) requests() cluster.Resources {
	if m.Requests != nil {
		return m.Requests
	}
	return cluster.PodRequests(m.Pod)
}

// Topology constrains where a group's members may go, by node label key.
type Topology struct {
	// Required, when set, is a node label key; all members must land on nodes sharing one
	// value of it (one rack, one zone). Nodes without the label are not eligible.
	Required string
	// Domain, with Required, pins the value: members already running chose it.
	Domain string
	// Preferred, when set, is a node label key; placement uses as few of its values as it can.
	Preferred string
}

// Group is a placement request: the members still needing nodes, and how many of them must
// be placed for the request to succeed.
type Group struct {
	// Name names the group in plans and diagnoses.
	Name string
	// MinMember is how many of Members must get a node; Place returns a plan for at least
	// this many, or none. Values above len(Members) can never be satisfied.
	MinMember int
	// Members are the pods to place, in order of preference.
	Members []Member
	// Topology constrains the members' nodes.
	Topology Topology
	// TaskMinimums, when set, are how many members of each named Task must be among
	// those placed (a Volcano PodGroup's spec.minTaskMember). Place places each task's
	// first members up to its minimum before any other member, and fails when one of
	// them gets no node. Tasks whose minimum is not positive ask for nothing.
	TaskMinimums map[string]int

	// prepared, set by Prepare, is the shape set of Members.
	prepared *shapeSet
}

// Prepare returns g with what placement derives from its members alone made once, for
// callers that place the group many times (a queue places each waiting group on every
// pass): Place and Try then skip grouping the members into shapes, ordering them and
// choosing the resource to pack on. The members must not be modified afterwards; a copy
// of the group given other members, or a part of them, is placed as if not prepared.
func Prepare(g Group) Group {
	g.prepared = newShapeSet(g.Members, g.TaskMinimums)
	return g
}

// Assignment puts one member on one node.
type Assignment struct {
	Member string
	Node   string
	// Provision names the member's claims (in its namespace) to provision on Node before
	// the member is bound: unbound claims of WaitForFirstConsumer classes, which wait for
	// a scheduler to name their node.
	Provision []string
	// BindVolumes binds the member's unbound WaitForFirstConsumer claims to existing
	// volumes Node can reach, before the member is bound.
	BindVolumes []kubefit.StaticBinding
	// Claims are the member's DRA ResourceClaims, each with the devices to allocate to it
	// (none for a claim allocated already), to write and reserve for the member before it
	// is bound. The plan assumes them on the snapshot.
	Claims []kubefit.ClaimAllocation
}

// Plan is a complete placement for a group: at least MinMember assignments, computed on one
// snapshot. Members left out (beyond MinMember, when not all fit) are listed in Unplaced.
type Plan struct {
	Group       string
	Assignments []Assignment
	Unplaced    []string
	// Domain is the value of the required topology key the plan uses, if any.
	Domain string

	undo []func()
}

// Revert removes the plan's assumptions from the snapshot it was placed on, last in,
// first out. Callers use it for what-if placements; a plan that is kept is never reverted.
func (p *Plan) Revert() {
	for i := len(p.undo) - 1; i >= 0; i-- {
		p.undo[i]()
	}
	p.undo = nil
}

// NodeOf returns the node assigned to member, or "".
func (p *Plan) NodeOf(member string) string {
	for _, a := range p.Assignments {
		if a.Member == member {
			return a.Node
		}
	}
	return ""
}

// shape is a set of members with identical scheduling constraints; placement and diagnosis
// work per shape, so a thousand identical workers cost as much as one. It is a form, the
// same for every placement of the group, with what one placement adds to it.
type shape struct {
	*form
	// ids number the form's names in the snapshot being placed on (see resolve), for fits.
	ids []cluster.ResourceID
	// dra, when set, marks the form's names that a DeviceClass of the snapshot provides
	// through DRA (kubefit.ExtendedClasses): a node without such a resource in its
	// allocatable is judged for it by the DynamicResources plugin, which allocates its
	// devices, and not by counting (as kube-scheduler's NodeResourcesFit delegates it).
	dra []bool
	// classes are the DeviceClasses s asks for devices of, which rank nodes (see
	// freeDevices): those that provide its DRA-backed resources (markDRA), and once
	// classesRead those its members' claims name, with tolerations their requests'
	// device tolerations.
	classes     []corev1.ResourceName
	tolerations kubefit.Tolerations
	classesRead bool
}

// markDRA sets s.dra from classes, the DRA-backed resources of s's requests; it reports
// whether s has any.
func (s *shape) markDRA(classes map[corev1.ResourceName]string) bool {
	s.dra, s.classes, s.tolerations, s.classesRead = nil, nil, nil, false
	for i, name := range s.names {
		if class, ok := classes[name]; ok {
			if s.dra == nil {
				s.dra = make([]bool, len(s.names))
			}
			s.dra[i] = true
			s.classes = append(s.classes, corev1.ResourceName(class))
		}
	}
	return s.dra != nil
}

// backedByDRA reports whether s's resource name is provided through DRA (shape.dra).
func (s *shape) backedByDRA(name corev1.ResourceName) bool {
	i := slices.Index(s.names, name)
	return i >= 0 && s.dra != nil && s.dra[i]
}

// delegated reports whether s's i-th resource is left to the DynamicResources plugin
// on n: backed by DRA, and not in n's allocatable.
func (s *shape) delegated(n *cluster.NodeInfo, i int) bool {
	return s.dra != nil && s.dra[i] && n.Allocatable[s.names[i]] == 0
}

// form is what a shape is made of that depends on its members alone, made once for a
// group that is placed many times (Prepare) and never modified after.
type form struct {
	key     string
	pod     *corev1.Pod
	req     cluster.Resources
	members []Member
	// core counts the members, first in members, that the group's task minimums need
	// (see coreOf): placement places every form's core before any other member.
	core     int
	affinity nodeaffinity.RequiredNodeAffinity
	// filters is set when kube-scheduler's hosted filters must judge the shape's pods,
	// claims when the pods mount PersistentVolumeClaims, and devices when they ask for
	// DRA devices through ResourceClaims (each such member is a shape of its own).
	filters, claims, devices bool
	// names and needs are req's positive amounts as parallel slices, in the order fits
	// tests them.
	names []corev1.ResourceName
	needs []int64
}

// testFirst moves name to the front of the resources fits tests, if f asks for it: the
// scarce resource is the one a busy node runs out of, so testing it first rejects a
// full node on the first lookup.
func (f *form) testFirst(name corev1.ResourceName) {
	if i := slices.Index(f.names, name); i > 0 {
		f.names[0], f.names[i] = f.names[i], f.names[0]
		f.needs[0], f.needs[i] = f.needs[i], f.needs[0]
	}
}

// resolve numbers s's resources in snap, whose nodes (and its copies') fits then reads
// by slice index rather than by name.
func (s *shape) resolve(snap *cluster.Snapshot) {
	s.ids = s.ids[:0]
	for _, name := range s.names {
		s.ids = append(s.ids, snap.ResourceID(name))
	}
}

// fits is how many members of s the node can take now.
func (s *shape) fits(n *cluster.NodeInfo) int {
	if s.dra == nil {
		return n.FitsIDs(s.ids, s.needs)
	}
	var idBuf [8]cluster.ResourceID
	var needBuf [8]int64
	ids, needs := idBuf[:0], needBuf[:0]
	for i, id := range s.ids {
		if !s.delegated(n, i) {
			ids, needs = append(ids, id), append(needs, s.needs[i])
		}
	}
	return n.FitsIDs(ids, needs)
}

// name describes a shape for diagnoses: its first member and how many it stands for.
func (f *form) name() string {
	if len(f.members) == 1 {
		return f.members[0].Name
	}
	return f.members[0].Name + " ×" + strconv.Itoa(len(f.members))
}

// formsOf splits members into the forms of their shapes, keeping first-appearance order,
// with each form's resources in canonical order. core, when set, marks the members the
// task minimums need (see coreOf): each form lists them first, in order.
func formsOf(members []Member, core []bool) []*form {
	var out []*form
	byKey := map[string]*form{}
	var rest map[*form][]Member
	if core != nil {
		rest = map[*form][]Member{}
	}
	for i, m := range members {
		req := m.requests()
		key := m.Key
		if key == "" {
			key = shapeKey(m.Pod, req)
		}
		f := byKey[key]
		if f == nil {
			f = &form{
				key:      key,
				pod:      m.Pod,
				req:      req,
				affinity: nodeaffinity.GetRequiredNodeAffinity(m.Pod),
				filters:  needsFilters(m.Pod),
				claims:   kubefit.HasClaims(m.Pod),
				devices:  kubefit.HasResourceClaims(m.Pod),
			}
			names := f.req.Names()
			f.names, f.needs = names[:0], make([]int64, 0, len(names))
			for _, name := range names {
				if v := f.req[name]; v > 0 {
					f.names = append(f.names, name)
					f.needs = append(f.needs, v)
				}
			}
			byKey[key] = f
			out = append(out, f)
		}
		if core != nil && !core[i] {
			rest[f] = append(rest[f], m)
			continue
		}
		f.members = append(f.members, m)
	}
	if core != nil {
		for _, f := range out {
			f.core = len(f.members)
			f.members = append(f.members, rest[f]...)
		}
	}
	return out
}

// coreOf marks the members the task minimums need: each task's first members, in
// order, up to its minimum. It returns nil when the minimums need none, and the first
// task with fewer members than its minimum, if any.
func coreOf(members []Member, minimums map[string]int) ([]bool, *TaskShortfall) {
	if len(minimums) == 0 {
		return nil, nil
	}
	var core []bool
	counts := map[string]int{}
	for i, m := range members {
		if m.Task == "" || counts[m.Task] >= minimums[m.Task] {
			continue
		}
		counts[m.Task]++
		if core == nil {
			core = make([]bool, len(members))
		}
		core[i] = true
	}
	if t, short := ShortTask(minimums, counts); short {
		return core, &t
	}
	return core, nil
}

// ShortTask returns the first task, in name order, whose count is below its minimum,
// with both (Members is its count); false when none is. Callers that count a group's
// members their own way (existing, Ready) check them against the minimums with it.
func ShortTask(minimums, counts map[string]int) (TaskShortfall, bool) {
	for _, task := range slices.Sorted(maps.Keys(minimums)) {
		if n := minimums[task]; counts[task] < n {
			return TaskShortfall{Task: task, Minimum: n, Members: counts[task]}, true
		}
	}
	return TaskShortfall{}, false
}

// shapeSet is everything placement derives from a group's members alone: the forms of
// their shapes in the order placement fills them, and the resource it packs on.
type shapeSet struct {
	// members and minimums are what the set was made from, to recognise it (see of).
	members  []Member
	minimums map[string]int
	forms    []*form
	scarce   corev1.ResourceName
	// filters is set when the hosted filters must judge some form's pods.
	filters bool
	// core is set when some form has members the task minimums need; short is the
	// first task with fewer members than its minimum.
	core  bool
	short *TaskShortfall
}

// newShapeSet makes the shape set of members: the forms with the biggest first (see
// orderForms), each testing the scarce resource first, each listing first the members
// the task minimums need.
func newShapeSet(members []Member, minimums map[string]int) *shapeSet {
	core, short := coreOf(members, minimums)
	forms := formsOf(members, core)
	set := &shapeSet{members: members, minimums: minimums, forms: forms, scarce: scarceResource(forms),
		core: core != nil, short: short}
	orderForms(forms, set.scarce)
	for _, f := range forms {
		f.testFirst(set.scarce)
		set.filters = set.filters || f.filters
	}
	return set
}

// of reports whether set was made from members, the very slice, not a copy or a part of
// it, and from minimums. A nil set was made from nothing.
func (set *shapeSet) of(members []Member, minimums map[string]int) bool {
	return set != nil && len(set.members) == len(members) && (len(members) == 0 || &set.members[0] == &members[0]) &&
		maps.Equal(set.minimums, minimums)
}

// shapes returns the set's shapes for one placement on snap, their resources numbered
// in it. They are the placement's own: the forms are shared, the ids are not. They are
// kept in store while they fit it, as most groups' shapes do.
func (set *shapeSet) shapes(snap *cluster.Snapshot, store *shapeStore) []*shape {
	shapes, ids := store.shapes[:0], store.ids[:0]
	for _, f := range set.forms {
		start := len(ids)
		for _, name := range f.names {
			ids = append(ids, snap.ResourceID(name))
		}
		shapes = append(shapes, shape{form: f, ids: ids[start:len(ids):len(ids)]})
	}
	out := store.ptrs[:0]
	for i := range shapes {
		out = append(out, &shapes[i])
	}
	return out
}

// shapeStore holds the shapes of one placement of a group of one or two shapes, with
// their ids, inside the placer rather than in allocations of their own.
type shapeStore struct {
	shapes [2]shape
	ptrs   [2]*shape
	ids    [8]cluster.ResourceID
}

// shapeSetOf returns g's prepared shape set when it was made from g's members, else a
// new one.
func shapeSetOf(g Group) *shapeSet {
	if g.prepared.of(g.Members, g.TaskMinimums) {
		return g.prepared
	}
	return newShapeSet(g.Members, g.TaskMinimums)
}

// shapeKey renders everything about a pod that placement reads, given its requests. Pods
// from one template (the workers of a job) share a key.
func shapeKey(p *corev1.Pod, req cluster.Resources) string { return keyOf(p, req, false) }

// keyOf is shapeKey, or with signature set the key Signature compares groups by: the
// same but for DRA claims, which it renders by what they are made from instead of by
// pod (see devicesKey).
func keyOf(p *corev1.Pod, req cluster.Resources, signature bool) string {
	var b strings.Builder
	req.Render(&b)
	keys := make([]string, 0, len(p.Spec.NodeSelector))
	for k := range p.Spec.NodeSelector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s=%s", k, p.Spec.NodeSelector[k])
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		b.WriteString("|aff:")
		b.WriteString(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.String())
	}
	for _, t := range p.Spec.Tolerations {
		b.WriteString("|tol:")
		b.WriteString(t.String())
	}
	b.WriteString(filterKey(p, signature))
	return b.String()
}
