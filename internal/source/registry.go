package source

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// StatusAnnotation holds, as a JSON list of metav1.Condition, the conditions of a
// scheduler-plugins PodGroup, whose API has no field for them.
const StatusAnnotation = "muster.dev/status"

// Object is a Kubernetes object of a group API, as a cache or a client returns it (it
// is what controller-runtime calls a client.Object).
type Object interface {
	metav1.Object
	runtime.Object
}

// GroupAPI is one group object API muster reads (DESIGN §2): the resource it is served
// as, how its objects translate into an engine.GroupSpec, and how a group's status is
// written back to them. The registry (GroupAPIs, APIOf) is the one list of them that
// the controller's watches, explain's lookups and the CLI read.
type GroupAPI struct {
	// Source is the source of the groups the API's objects declare.
	Source engine.Source
	// Resource is the API's resource.
	Resource schema.GroupVersionResource
	// Kind is the kind of its objects.
	Kind string
	// StatusSubresource is whether the API writes status through the status
	// subresource; Volcano's CRD has none, so its status is part of the main resource.
	StatusSubresource bool

	newObject func() Object
	translate func(obj Object, members []*corev1.Pod, prio PriorityResolver) (spec engine.GroupSpec, gang bool, ok bool)
	status    func(conds []metav1.Condition, phase lifecycle.Phase, written string) StatusWrite
}

// StatusWrite is how a group's status reaches its object. Annotations are merged into the
// object's metadata.annotations; Status is a JSON merge patch of its status (nil when
// nothing in it changes), written in the same patch of the main resource as the
// annotations, or, when Subresource is set, in a second patch of the status subresource.
type StatusWrite struct {
	Annotations map[string]string
	Status      map[string]any
	Subresource bool
	// Phase is the phase the object's status carries after the write, for the caller to
	// pass back as written next time; "" for an API without a phase.
	Phase string
}

// groupAPIs are the group APIs, in the order they are discovered and looked in.
var groupAPIs = []GroupAPI{{
	Source:            engine.Coscheduling,
	Resource:          spv1alpha1.GroupVersion.WithResource("podgroups"),
	Kind:              "PodGroup",
	StatusSubresource: true,
	newObject:         func() Object { return &spv1alpha1.PodGroup{} },
	translate: func(obj Object, members []*corev1.Pod, prio PriorityResolver) (engine.GroupSpec, bool, bool) {
		pg, ok := obj.(*spv1alpha1.PodGroup)
		if !ok {
			return engine.GroupSpec{}, false, false
		}
		return FromCoscheduling(pg, members, prio), true, true
	},
	status: coschedulingStatus,
}, {
	Source:    engine.Volcano,
	Resource:  volcanov1beta1.GroupVersion.WithResource("podgroups"),
	Kind:      "PodGroup",
	newObject: func() Object { return &volcanov1beta1.PodGroup{} },
	translate: func(obj Object, _ []*corev1.Pod, prio PriorityResolver) (engine.GroupSpec, bool, bool) {
		pg, ok := obj.(*volcanov1beta1.PodGroup)
		if !ok {
			return engine.GroupSpec{}, false, false
		}
		return FromVolcano(pg, prio), true, true
	},
	status: func(conds []metav1.Condition, _ lifecycle.Phase, _ string) StatusWrite {
		return StatusWrite{Status: map[string]any{"conditions": volcanoConditions(conds)}}
	},
}, {
	Source:            engine.Native,
	Resource:          schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups"),
	Kind:              "PodGroup",
	StatusSubresource: true,
	newObject:         func() Object { return &schedulingv1beta1.PodGroup{} },
	translate: func(obj Object, _ []*corev1.Pod, prio PriorityResolver) (engine.GroupSpec, bool, bool) {
		pg, ok := obj.(*schedulingv1beta1.PodGroup)
		if !ok {
			return engine.GroupSpec{}, false, false
		}
		return FromNative(pg, prio), !IsBasic(pg), true
	},
	status: func(conds []metav1.Condition, _ lifecycle.Phase, _ string) StatusWrite {
		return StatusWrite{Status: map[string]any{"conditions": conds}, Subresource: true}
	},
}}

// GroupAPIs returns the group APIs, in the order they are discovered and looked in.
func GroupAPIs() []GroupAPI { return append([]GroupAPI(nil), groupAPIs...) }

// APIOf returns the group API of src, or nil for sources without a group object
// (Labels and Single groups).
func APIOf(src engine.Source) *GroupAPI {
	for i := range groupAPIs {
		if groupAPIs[i].Source == src {
			return &groupAPIs[i]
		}
	}
	return nil
}

// Name is how diagnoses name the API: "scheduling.x-k8s.io/v1alpha1 PodGroup".
func (a *GroupAPI) Name() string { return a.Resource.GroupVersion().String() + " " + a.Kind }

// GroupVersionKind is the kind of the API's objects.
func (a *GroupAPI) GroupVersionKind() schema.GroupVersionKind {
	return a.Resource.GroupVersion().WithKind(a.Kind)
}

// New returns an empty object of the API, to read one into.
func (a *GroupAPI) New() Object { return a.newObject() }

// Decode converts an object of the API read as unstructured into its typed form. An
// object of another kind, or one whose fields do not decode, is an error naming it.
func (a *GroupAPI) Decode(u *unstructured.Unstructured) (Object, error) {
	if gvk := u.GroupVersionKind(); gvk != a.GroupVersionKind() {
		return nil, fmt.Errorf("%s %s/%s: expected a %s", gvk, u.GetNamespace(), u.GetName(), a.Name())
	}
	obj := a.newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", a.Name(), u.GetNamespace(), u.GetName(), err)
	}
	return obj, nil
}

// Translate translates obj, an object of the API, with its member pods (those the
// caller counts as the group's: the controller passes muster's own) and the priority
// resolver. gang is false when the object asks for no gang, a Native PodGroup with the
// basic policy: spec (MinMember 1) is then what each member carries as a group of its
// own, and the caller schedules the members alone (see IsBasic). An object of another
// type translates into a spec that is Invalid, naming its type.
func (a *GroupAPI) Translate(obj Object, members []*corev1.Pod, prio PriorityResolver) (spec engine.GroupSpec, gang bool) {
	spec, gang, ok := a.translate(obj, members, prio)
	if !ok {
		spec = newSpec(Ref{Source: a.Source, Namespace: obj.GetNamespace(), Name: obj.GetName()})
		spec.Invalid = append(spec.Invalid, fmt.Sprintf("object: %T: expected a %s", obj, a.Name()))
		return spec, true
	}
	return spec, gang
}

// StatusOut says what to write to a group object of the API for conds (the group's
// conditions, with their transition times as they are to be stored) and the lifecycle
// phase: where the conditions go (an annotation, status in the main resource, or the
// status subresource) and the API's phase, written only when it differs from written,
// the phase last written ("" when unknown).
func (a *GroupAPI) StatusOut(conds []metav1.Condition, phase lifecycle.Phase, written string) StatusWrite {
	return a.status(conds, phase, written)
}

// Conditions reads back the conditions muster wrote to u, an object of the API, as
// StatusOut placed them; nil when there are none or they do not decode (the object
// may have been edited by anyone who can write it).
func (a *GroupAPI) Conditions(u *unstructured.Unstructured) []metav1.Condition {
	var data []byte
	if a.Source == engine.Coscheduling {
		data = []byte(u.GetAnnotations()[StatusAnnotation])
	} else {
		raw, found, err := unstructured.NestedSlice(u.Object, "status", "conditions")
		if err != nil || !found {
			return nil
		}
		if data, err = json.Marshal(raw); err != nil {
			return nil
		}
	}
	var conds []metav1.Condition
	if len(data) == 0 || json.Unmarshal(data, &conds) != nil {
		return nil
	}
	return conds
}

// coschedulingStatus writes the conditions of a scheduler-plugins PodGroup, whose API
// has no field for them, to StatusAnnotation, and its status.phase when it moves.
func coschedulingStatus(conds []metav1.Condition, phase lifecycle.Phase, written string) StatusWrite {
	data, _ := json.Marshal(conds) // conditions always encode
	w := StatusWrite{Annotations: map[string]string{StatusAnnotation: string(data)}, Subresource: true}
	p := CoschedulingPhase(phase)
	if string(p) != written {
		w.Status = map[string]any{"phase": p}
	}
	w.Phase = string(p)
	return w
}

// CoschedulingPhase maps a lifecycle phase to a scheduler-plugins PodGroup phase.
func CoschedulingPhase(phase lifecycle.Phase) spv1alpha1.PodGroupPhase {
	switch phase {
	case lifecycle.Binding, lifecycle.Starting:
		return spv1alpha1.PodGroupScheduling
	case lifecycle.Running, lifecycle.Recovering:
		return spv1alpha1.PodGroupRunning
	case lifecycle.Finished:
		return spv1alpha1.PodGroupFinished
	case lifecycle.Failed:
		return spv1alpha1.PodGroupFailed
	}
	return spv1alpha1.PodGroupPending
}

// volcanoConditions converts conditions to Volcano's PodGroupCondition.
func volcanoConditions(conds []metav1.Condition) []volcanov1beta1.PodGroupCondition {
	out := make([]volcanov1beta1.PodGroupCondition, 0, len(conds))
	for _, c := range conds {
		out = append(out, volcanov1beta1.PodGroupCondition{
			Type:               volcanov1beta1.PodGroupConditionType(c.Type),
			Status:             corev1.ConditionStatus(c.Status),
			LastTransitionTime: c.LastTransitionTime,
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	return out
}
