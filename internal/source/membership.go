package source

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

// Ref names a group: the API it comes from and its namespaced name. For a Single group
// the name is the pod's.
type Ref struct {
	Source    engine.Source
	Namespace string
	Name      string
}

// Key returns the group's key in the format of engine.GroupSpec.Key: SOURCE/namespace/name.
func (r Ref) Key() string {
	return fmt.Sprintf("%s/%s/%s", r.Source, r.Namespace, r.Name)
}

// String returns the key.
func (r Ref) String() string { return r.Key() }

// GroupOf returns the group pod belongs to. When the pod names several, the first of these
// wins: spec.schedulingGroup.podGroupName, the scheduling.x-k8s.io/pod-group label, the
// scheduling.k8s.io/group-name annotation, the muster.dev/group label. An empty value
// names nothing. A pod naming no group is a Single group of its own.
func GroupOf(pod *corev1.Pod) Ref {
	ref := Ref{Namespace: pod.Namespace}
	switch {
	case pod.Spec.SchedulingGroup != nil && pod.Spec.SchedulingGroup.PodGroupName != nil &&
		*pod.Spec.SchedulingGroup.PodGroupName != "":
		ref.Source, ref.Name = engine.Native, *pod.Spec.SchedulingGroup.PodGroupName
	case pod.Labels[musterv1alpha1.CoschedulingPodGroupLabel] != "":
		ref.Source, ref.Name = engine.Coscheduling, pod.Labels[musterv1alpha1.CoschedulingPodGroupLabel]
	case pod.Annotations[musterv1alpha1.VolcanoGroupNameAnnotation] != "":
		ref.Source, ref.Name = engine.Volcano, pod.Annotations[musterv1alpha1.VolcanoGroupNameAnnotation]
	case pod.Labels[musterv1alpha1.GroupLabel] != "":
		ref.Source, ref.Name = engine.Labels, pod.Labels[musterv1alpha1.GroupLabel]
	default:
		ref.Source, ref.Name = engine.Single, pod.Name
	}
	return ref
}

// JoinedBy says how a pod joins a group of source, for diagnoses such as "8 pods carry the
// scheduling.x-k8s.io/pod-group label".
func JoinedBy(source engine.Source) string {
	switch source {
	case engine.Native:
		return "set spec.schedulingGroup.podGroupName"
	case engine.Coscheduling:
		return "carry the " + musterv1alpha1.CoschedulingPodGroupLabel + " label"
	case engine.Volcano:
		return "carry the " + musterv1alpha1.VolcanoGroupNameAnnotation + " annotation"
	case engine.Labels:
		return "carry the " + musterv1alpha1.GroupLabel + " label"
	default:
		return "name no group"
	}
}

// newSpec starts a spec for ref with its key filled in.
func newSpec(ref Ref) engine.GroupSpec {
	return engine.GroupSpec{Key: ref.Key(), Source: ref.Source, Namespace: ref.Namespace, Name: ref.Name}
}

// minMemberField is the field that holds a group's minimum in source's API, for messages.
func minMemberField(source engine.Source) string {
	switch source {
	case engine.Native:
		return "spec.schedulingPolicy.gang.minCount"
	case engine.Labels, engine.Single:
		return annotationField(musterv1alpha1.MinMemberAnnotation)
	default:
		return "spec.minMember"
	}
}
