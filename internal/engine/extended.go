package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/forecast"
	"github.com/muster-sched/muster/internal/kubefit"
)

// Extended resources backed by DRA (KEP-5004): a DeviceClass may name an extended
// resource it provides (spec.extendedResourceName, or the implicit name
// deviceclass.resource.kubernetes.io/<class>). kube-scheduler counts a pod's request of
// such a resource against a node's allocatable where the node has the resource there
// (a device plugin serves it), and allocates devices of the class on a node that does
// not. Placement runs kube-scheduler's plugins, which do both; what the engine adds is
// the forecast's count of such requests, what they charge to a Queue's quota, and the
// note in a waiting group's reason.

// extendedByDRA says, for a group whose members request an extended resource that no
// node has in its allocatable but a DeviceClass provides through DRA, which resource and
// class: the request is allocated as devices of the class (kubefit's extended claims),
// and a group that waits for it waits for them. nil when there is none.
func (e *Engine) extendedByDRA(g *group) *musterv1alpha1.ExtendedByDRA {
	classOf := e.extendedClasses().onlyDRA
	if len(classOf) == 0 {
		return nil
	}
	// The first such request by member key, then by resource name, without sorting:
	// with a class's implicit name no node has, every waiting group is read here.
	var member string
	var found *musterv1alpha1.ExtendedByDRA
	for key := range g.members {
		for name, n := range g.requests[key] {
			class, ok := classOf[name]
			if !ok || n <= 0 || found != nil && (key > member || key == member && name > found.Resource) {
				continue
			}
			member, found = key, &musterv1alpha1.ExtendedByDRA{Resource: name, DeviceClass: class}
		}
	}
	return found
}

// draExtended is, by extended resource name, the DeviceClass that provides the resource
// through DRA (kube-scheduler's choice, kubefit Host.ExtendedResources), as read on
// snapshot snap at its node layout and devices' generation: all of them (classOf), and
// those no node has in its allocatable (onlyDRA); and, by DeviceClass, the extended
// resource it names in its spec.extendedResourceName (named).
type draExtended struct {
	snap               *cluster.Snapshot
	layout, devicesGen uint64
	classOf, onlyDRA   map[corev1.ResourceName]string
	named              map[corev1.ResourceName]corev1.ResourceName
}

// extendedClasses returns the extended resources DeviceClasses provide (see
// draExtended), found again only when a node or a device changed: every status read of
// every waiting group asks (in a deep queue, the classes sorted and matched for each
// group, every second, were an eighth of the loop).
func (e *Engine) extendedClasses() *draExtended {
	m := &e.draExtended
	objs := e.snap.Objects()
	if m.snap == e.snap && m.layout == e.snap.Layout() && m.devicesGen == objs.DevicesGeneration() {
		return m
	}
	*m = draExtended{snap: e.snap, layout: e.snap.Layout(), devicesGen: objs.DevicesGeneration()}
	for name, class := range objs.DeviceClasses {
		if x := class.Spec.ExtendedResourceName; x != nil && cluster.IsExtended(corev1.ResourceName(*x)) {
			if m.named == nil {
				m.named = map[corev1.ResourceName]corev1.ResourceName{}
			}
			m.named[corev1.ResourceName(name)] = corev1.ResourceName(*x)
		}
	}
	h, err := kubefit.HostOf(e.snap)
	if err != nil {
		return m
	}
	all, err := h.ExtendedResources(e.snap)
	if err != nil {
		return m
	}
	total := e.snap.Allocatable()
	for name, class := range all {
		if !cluster.IsExtended(name) {
			continue
		}
		if m.classOf == nil {
			m.classOf = map[corev1.ResourceName]string{}
		}
		m.classOf[name] = class
		if total[name] > 0 {
			continue
		}
		if m.onlyDRA == nil {
			m.onlyDRA = map[corev1.ResourceName]string{}
		}
		m.onlyDRA[name] = class
	}
	return m
}

// charges is what a member asking for req, whose claims charge d (kubefit.DeviceCounts,
// by DeviceClass), charges to a Queue's quota beyond req, as Kubernetes' ResourceQuota
// counts extended resources backed by DRA (kubernetes#134210): the devices of a class
// that names an extended resource charge that resource too, so a quota of
// nvidia.com/gpu written for the device plugin holds for claims of the class that now
// provides it; and a request of an extended resource that only DRA provides (no node
// has it in its allocatable) charges the devices of its class too, so a quota of the
// class holds for such requests. d itself when neither applies.
func (x *draExtended) charges(req, d cluster.Resources) cluster.Resources {
	if len(x.named) == 0 && len(x.onlyDRA) == 0 {
		return d
	}
	var out cluster.Resources
	add := func(name corev1.ResourceName, n int64) {
		if out == nil {
			out = d.Clone()
			if out == nil {
				out = cluster.Resources{}
			}
		}
		out[name] += n
	}
	for class, n := range d {
		if name, ok := x.named[class]; ok && n > 0 {
			add(name, n)
		}
	}
	for name, n := range req { // a few names, where every class has an implicit one
		if class, ok := x.onlyDRA[name]; ok && n > 0 {
			add(corev1.ResourceName(class), n)
		}
	}
	if out == nil {
		return d
	}
	return out
}

// asDevices is req with each extended resource that classOf says a DeviceClass provides
// through DRA counted as devices of that class, as the forecast counts the nodes'
// devices (see withDevices); req itself when it asks for none.
func asDevices(req cluster.Resources, classOf map[corev1.ResourceName]string) cluster.Resources {
	return servedOn(req, nil, classOf, true)
}

// servedOn is r, what is free, used or released on a node whose allocatable is alloc,
// as the forecast counts it there: each extended resource a DeviceClass provides
// (classOf) counted as devices of the class where the node has it in its allocatable
// (a device plugin serves it: a queued group's members may take it there or take the
// class's devices elsewhere), and left out where it does not, since the devices of its
// claims are counted there (withDevices). With all, it is counted as devices
// everywhere (what a queued member asks for). r itself when it names none of them.
func servedOn(r, alloc cluster.Resources, classOf map[corev1.ResourceName]string, all bool) cluster.Resources {
	var out cluster.Resources
	for name, class := range classOf {
		n, ok := r[name]
		if !ok {
			continue
		}
		if out == nil {
			out = r.Clone()
		}
		delete(out, name)
		if all || alloc[name] > 0 {
			out[corev1.ResourceName(class)] += n
		}
	}
	if out == nil {
		return r
	}
	return out
}

// servedNode counts node's Free and Used as servedOn does on a node with devices or with
// one of classOf's resources in its allocatable alloc, and reports whether it did: such
// a node and its releases are then read anew at every forecast (Gen 0), as DeviceClasses
// change without it.
func servedNode(node *forecast.Node, alloc cluster.Resources, classOf map[corev1.ResourceName]string, hasDevices bool) bool {
	if len(classOf) == 0 || !hasDevices && !hasAny(alloc, classOf) {
		return false
	}
	node.Free, node.Used, node.Gen = servedOn(node.Free, alloc, classOf, false), servedOn(node.Used, alloc, classOf, false), 0
	return true
}

// hasAny reports whether alloc has some of one of classOf's resources.
func hasAny(alloc cluster.Resources, classOf map[corev1.ResourceName]string) bool {
	for name := range classOf {
		if alloc[name] > 0 {
			return true
		}
	}
	return false
}

// servedReleases counts the releases on a node whose allocatable is alloc as servedOn
// does.
func servedReleases(releases []forecast.Release, alloc cluster.Resources, classOf map[corev1.ResourceName]string) {
	for i := range releases {
		releases[i].Resources = servedOn(releases[i].Resources, alloc, classOf, false)
	}
}

// extendedByDRANote is the text of x in a group's reason.
func extendedByDRANote(x musterv1alpha1.ExtendedByDRA) string {
	return fmt.Sprintf("%s is provided through DRA by DeviceClass %s and no node has it as an extended resource: its devices serve it",
		x.Resource, x.DeviceClass)
}
