package source

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
)

// PriorityClass is what muster reads of a PriorityClass.
type PriorityClass struct {
	// Value is the priority of the class's pods.
	Value int32
	// PreemptionPolicy is the class's preemptionPolicy; "" means PreemptLowerPriority.
	PreemptionPolicy corev1.PreemptionPolicy
}

// PriorityResolver returns the PriorityClass named priorityClassName, and false when
// there is no such class. A nil PriorityResolver knows no class.
type PriorityResolver func(priorityClassName string) (PriorityClass, bool)

// resolve looks a class up, tolerating a nil resolver.
func (r PriorityResolver) resolve(name string) (PriorityClass, bool) {
	if r == nil {
		return PriorityClass{}, false
	}
	return r(name)
}

// FromCoscheduling translates a scheduler-plugins PodGroup. Its API carries no priority,
// so the group's priority is the highest of its member pods' (see FromLabels); pods may
// be empty while the group gathers.
func FromCoscheduling(pg *spv1alpha1.PodGroup, pods []*corev1.Pod, prio PriorityResolver) engine.GroupSpec {
	spec := newSpec(Ref{Source: engine.Coscheduling, Namespace: pg.Namespace, Name: pg.Name})
	checkMinMember(&spec, "spec.minMember", pg.Spec.MinMember)
	spec.MinResources = resources(pg.Spec.MinResources)
	if _, overridden := pg.Annotations[musterv1alpha1.StartTimeoutAnnotation]; !overridden {
		if s := pg.Spec.ScheduleTimeoutSeconds; s != nil {
			if *s < 1 {
				spec.Invalid = append(spec.Invalid, fmt.Sprintf("spec.scheduleTimeoutSeconds: %d: must be at least 1", *s))
			} else {
				d := time.Duration(*s) * time.Second
				spec.Policy.StartTimeout = &d
			}
		}
	}
	spec.Priority, spec.PreemptNever = memberPriority(&spec, pods, prio)
	applyAnnotations(&spec, objectLookup(pg.Annotations))
	return spec
}

// FromVolcano translates a Volcano PodGroup.
func FromVolcano(pg *volcanov1beta1.PodGroup, prio PriorityResolver) engine.GroupSpec {
	spec := newSpec(Ref{Source: engine.Volcano, Namespace: pg.Namespace, Name: pg.Name})
	checkMinMember(&spec, "spec.minMember", pg.Spec.MinMember)
	volcanoTaskMinimums(&spec, pg.Spec.MinMember, pg.Spec.MinTaskMember)
	if pg.Spec.MinResources != nil {
		spec.MinResources = resources(*pg.Spec.MinResources)
	}
	_, queueSet := pg.Annotations[musterv1alpha1.QueueAnnotation]
	switch q := pg.Spec.Queue; {
	case q == volcanov1beta1.DefaultQueue || q == "" || queueSet:
	case len(validation.IsDNS1123Subdomain(q)) > 0:
		spec.Invalid = append(spec.Invalid, fmt.Sprintf(
			"spec.queue: %q: expected a Queue name: lower-case letters, digits, '-' and '.'", q))
	default:
		spec.Queue = q
	}
	spec.Priority, spec.PreemptNever = classPriority(&spec, "spec.priorityClassName", pg.Spec.PriorityClassName, prio)
	_, topologySet := pg.Annotations[musterv1alpha1.TopologyAnnotation]
	if nt := pg.Spec.NetworkTopology; nt != nil && nt.Mode != volcanov1beta1.SoftNetworkTopologyMode && !topologySet {
		spec.Invalid = append(spec.Invalid, fmt.Sprintf(
			"spec.networkTopology.mode: %q: muster does not model HyperNode tiers; set %s to a node label key instead",
			string(volcanov1beta1.HardNetworkTopologyMode), musterv1alpha1.TopologyAnnotation))
	}
	applyAnnotations(&spec, objectLookup(pg.Annotations))
	return spec
}

// volcanoTaskMinimums records a Volcano PodGroup's spec.minTaskMember as the group's
// task minimums. As Volcano does, they hold only while their sum is at most minMember: a
// Volcano Job whose minAvailable is below its tasks' minimums (their default is each
// task's replicas) asks for minAvailable members of any task. A negative minimum is
// recorded in spec.Invalid; a zero one asks for nothing.
func volcanoTaskMinimums(spec *engine.GroupSpec, minMember int32, minimums map[string]int32) {
	var sum int64
	out := map[string]int{}
	for _, task := range slices.Sorted(maps.Keys(minimums)) {
		switch n := minimums[task]; {
		case n < 0:
			spec.Invalid = append(spec.Invalid, fmt.Sprintf("spec.minTaskMember[%q]: %d: must not be negative", task, n))
		case n > 0:
			out[task] = int(n)
			sum += int64(n)
		}
	}
	if len(out) > 0 && sum <= int64(minMember) {
		spec.TaskMinimums = out
	}
}

// IsBasic reports whether a Native PodGroup has the basic policy: no gang, each member
// scheduled on its own as a group of one.
func IsBasic(pg *schedulingv1beta1.PodGroup) bool {
	return pg.Spec.SchedulingPolicy.Basic != nil && pg.Spec.SchedulingPolicy.Gang == nil
}

// FromNative translates a Kubernetes PodGroup. For the basic policy it returns MinMember 1;
// the controller schedules each member alone (see IsBasic and the package documentation).
func FromNative(pg *schedulingv1beta1.PodGroup, prio PriorityResolver) engine.GroupSpec {
	spec := newSpec(Ref{Source: engine.Native, Namespace: pg.Namespace, Name: pg.Name})
	switch policy := pg.Spec.SchedulingPolicy; {
	case policy.Gang != nil && policy.Basic != nil:
		spec.Invalid = append(spec.Invalid, "spec.schedulingPolicy: both basic and gang are set: expected exactly one")
	case policy.Gang != nil:
		checkMinMember(&spec, "spec.schedulingPolicy.gang.minCount", policy.Gang.MinCount)
	case policy.Basic != nil:
		spec.MinMember = 1
	default:
		spec.Invalid = append(spec.Invalid, "spec.schedulingPolicy: neither basic nor gang is set: expected exactly one")
	}
	if pg.Spec.Priority != nil {
		spec.Priority = *pg.Spec.Priority
		if pc, ok := prio.resolve(pg.Spec.PriorityClassName); ok {
			spec.PreemptNever = pc.PreemptionPolicy == corev1.PreemptNever
		}
	} else {
		spec.Priority, spec.PreemptNever = classPriority(&spec, "spec.priorityClassName", pg.Spec.PriorityClassName, prio)
	}
	if _, overridden := pg.Annotations[musterv1alpha1.TopologyAnnotation]; !overridden {
		nativeTopology(&spec, pg.Spec.SchedulingConstraints)
	}
	nativeClaims(&spec, pg)
	applyAnnotations(&spec, objectLookup(pg.Annotations))
	return spec
}

// nativeClaims records a native PodGroup's spec.resourceClaims: its members' claims that
// are allocated once for the group and reserved for the PodGroup. An entry that names
// neither a claim nor a template, or both, is recorded in spec.Invalid.
func nativeClaims(spec *engine.GroupSpec, pg *schedulingv1beta1.PodGroup) {
	for i, c := range pg.Spec.ResourceClaims {
		if (c.ResourceClaimName == nil) == (c.ResourceClaimTemplateName == nil) {
			spec.Invalid = append(spec.Invalid, fmt.Sprintf(
				"spec.resourceClaims[%d] (%q): expected exactly one of resourceClaimName and resourceClaimTemplateName", i, c.Name))
			return
		}
	}
	if len(pg.Spec.ResourceClaims) == 0 {
		return
	}
	spec.GroupClaims = pg.Spec.ResourceClaims
	spec.ClaimConsumer = &resourcev1.ResourceClaimConsumerReference{
		APIGroup: schedulingv1beta1.GroupName, Resource: "podgroups", Name: pg.Name, UID: pg.UID}
}

// nativeTopology sets the required topology from a Native PodGroup's constraints: one
// constraint, whose key is a node label key. Anything else is recorded in spec.Invalid.
func nativeTopology(spec *engine.GroupSpec, c *schedulingv1beta1.PodGroupSchedulingConstraints) {
	if c == nil || len(c.Topology) == 0 {
		return
	}
	if n := len(c.Topology); n > 1 {
		spec.Invalid = append(spec.Invalid, fmt.Sprintf(
			"spec.schedulingConstraints.topology: %d constraints: expected at most one", n))
		return
	}
	key := c.Topology[0].Key
	if len(validation.IsQualifiedName(key)) > 0 {
		spec.Invalid = append(spec.Invalid, fmt.Sprintf(
			"spec.schedulingConstraints.topology[0].key: %q: expected a node label key such as \"topology.kubernetes.io/zone\"", key))
		return
	}
	spec.Topology.Required = key
}

// FromLabels translates a plain group: pods labelled muster.dev/group, with no group
// object. MinMember comes from the muster.dev/min-member annotation, which is required and
// on which the pods that carry it must agree; the per-group annotations are read from the
// pods the same way. The group's priority is the highest of its pods'.
func FromLabels(ref Ref, pods []*corev1.Pod, prio PriorityResolver) engine.GroupSpec {
	spec := newSpec(ref)
	look := podsLookup(&spec, pods)
	key := musterv1alpha1.MinMemberAnnotation
	switch v, ok := look(key); {
	case ok:
		if n, ok := parseCount(&spec, key, v, 1); ok {
			spec.MinMember = n
		}
	case len(spec.Invalid) == 0:
		spec.Invalid = append(spec.Invalid, fmt.Sprintf(
			"%s: not set on any member: expected a whole number of 1 or more", annotationField(key)))
	}
	spec.Priority, spec.PreemptNever = memberPriority(&spec, pods, prio)
	applyAnnotations(&spec, look)
	return spec
}

// FromSingle translates a pod of muster's that names no group: a group of one, keyed by the
// pod's name, with the per-group annotations read from the pod. A muster.dev/min-member
// other than "1" is Invalid, since without the muster.dev/group label the pod has no peers.
func FromSingle(pod *corev1.Pod, prio PriorityResolver) engine.GroupSpec {
	spec := newSpec(Ref{Source: engine.Single, Namespace: pod.Namespace, Name: pod.Name})
	spec.MinMember = 1
	if v, ok := pod.Annotations[musterv1alpha1.MinMemberAnnotation]; ok && v != "1" {
		invalidAnnotation(&spec, musterv1alpha1.MinMemberAnnotation, v, fmt.Sprintf(
			"the pod has no %s label, so it is a group of one", musterv1alpha1.GroupLabel))
	}
	spec.Priority, spec.PreemptNever = memberPriority(&spec, []*corev1.Pod{pod}, prio)
	applyAnnotations(&spec, objectLookup(pod.Annotations))
	return spec
}

// checkMinMember sets spec.MinMember, recording a value below 1.
func checkMinMember(spec *engine.GroupSpec, field string, n int32) {
	spec.MinMember = int(n)
	if n < 1 {
		spec.Invalid = append(spec.Invalid, fmt.Sprintf("%s: %d: must be at least 1", field, n))
	}
}

// classPriority resolves a group's priorityClassName; "" is priority 0.
func classPriority(spec *engine.GroupSpec, field, class string, prio PriorityResolver) (value int32, preemptNever bool) {
	if class == "" {
		return 0, false
	}
	pc, ok := prio.resolve(class)
	if !ok {
		spec.Invalid = append(spec.Invalid, fmt.Sprintf("%s: %q: no such PriorityClass", field, class))
	}
	return pc.Value, pc.PreemptionPolicy == corev1.PreemptNever
}

// memberPriority is the highest priority among pods: spec.priority, set by the API
// server's Priority admission, or else spec.priorityClassName through the resolver.
// preemptNever reports whether some pod may not preempt: its spec.preemptionPolicy
// (set by the same admission), or else its class's, is Never.
func memberPriority(spec *engine.GroupSpec, pods []*corev1.Pod, prio PriorityResolver) (highest int32, preemptNever bool) {
	for i, p := range pods {
		var v int32
		var never bool
		if p.Spec.Priority != nil {
			v = *p.Spec.Priority
		} else {
			v, never = classPriority(spec, "pod "+p.Name+": spec.priorityClassName", p.Spec.PriorityClassName, prio)
		}
		if p.Spec.PreemptionPolicy != nil {
			never = *p.Spec.PreemptionPolicy == corev1.PreemptNever
		}
		if i == 0 || v > highest {
			highest = v
		}
		preemptNever = preemptNever || never
	}
	return highest, preemptNever
}

// resources converts a minResources list; an empty list is no minimum.
func resources(list corev1.ResourceList) cluster.Resources {
	if len(list) == 0 {
		return nil
	}
	return cluster.FromList(list)
}
