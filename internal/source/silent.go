package source

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

// The reasons of the cases where a pod would otherwise wait with no word: the
// controller writes them as the pod's PodScheduled=False reason and as Events.
const (
	// ReasonGroupNotFound: the pod names a PodGroup that does not exist, or one of an
	// API the cluster does not serve.
	ReasonGroupNotFound = "GroupNotFound"
	// ReasonInvalidGroupName: the pod names a group by a name no object can have.
	ReasonInvalidGroupName = "InvalidGroupName"
	// ReasonAmbiguousGroup: the pod names groups of more than one API.
	ReasonAmbiguousGroup = "AmbiguousGroup"
)

// Claims returns every group pod names, in GroupOf's order of precedence (the first
// is the group it joins), or none for a pod that names no group.
func Claims(pod *corev1.Pod) []Ref {
	var out []Ref
	add := func(src engine.Source, name string) {
		if name != "" {
			out = append(out, Ref{Source: src, Namespace: pod.Namespace, Name: name})
		}
	}
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		add(engine.Native, *sg.PodGroupName)
	}
	add(engine.Coscheduling, pod.Labels[musterv1alpha1.CoschedulingPodGroupLabel])
	add(engine.Volcano, pod.Annotations[musterv1alpha1.VolcanoGroupNameAnnotation])
	add(engine.Labels, pod.Labels[musterv1alpha1.GroupLabel])
	return out
}

// Ambiguous returns, for a pod that names groups of more than one API, the message of
// its AmbiguousGroup Event, or "" for a pod that names one group or none.
func Ambiguous(pod *corev1.Pod) string {
	claims := Claims(pod)
	if len(claims) < 2 {
		return ""
	}
	var ignored []string
	for _, c := range claims[1:] {
		ignored = append(ignored, fmt.Sprintf("%s %q (pods that %s)", c.Source, c.Name, JoinedBy(c.Source)))
	}
	return fmt.Sprintf("the pod names groups of %d APIs: it joins %s %q (pods that %s) and ignores %s; name one group",
		len(claims), claims[0].Source, claims[0].Name, JoinedBy(claims[0].Source), strings.Join(ignored, ", "))
}

// InvalidName returns why ref's name can name no group object (a Volcano group name
// with a "/", say), or "" for a valid name or a group with no object.
func InvalidName(ref Ref) string {
	if ref.Source == engine.Single {
		return ""
	}
	msgs := validation.IsDNS1123Subdomain(ref.Name)
	if ref.Source == engine.Labels {
		msgs = validation.IsValidLabelValue(ref.Name)
	}
	if len(msgs) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %q: not a group name: %s; the pod joins no group until it names a valid one",
		claimField(ref.Source), ref.Name, strings.Join(msgs, "; "))
}

// NotFound returns the message of a pod that names the group object ref, which does
// not exist; served is whether the cluster serves ref's API (apiVersion).
func NotFound(ref Ref, apiVersion string, served bool) string {
	if !served {
		return fmt.Sprintf("%s: %q names a PodGroup of %s, which the cluster does not serve; the pod waits until the API is installed and the PodGroup created",
			claimField(ref.Source), ref.Name, apiVersion)
	}
	return fmt.Sprintf("%s: %q: PodGroup %s/%s (%s) does not exist; the pod waits until it is created",
		claimField(ref.Source), ref.Name, ref.Namespace, ref.Name, apiVersion)
}

// Unowned returns, for a gathering group none of whose members has a controller
// owner, the note that nothing will create the missing members, or "" when members
// are not missing or some controller owns them.
func Unowned(spec engine.GroupSpec, members int, pods []*corev1.Pod) string {
	if members >= spec.MinMember {
		return ""
	}
	for _, p := range pods {
		if metav1.GetControllerOf(p) != nil {
			return ""
		}
	}
	return fmt.Sprintf("no controller owns the members, so nothing will create the %d missing: create them or lower %s",
		spec.MinMember-members, minMemberField(spec.Source))
}

// claimField is where a pod names a group of source, for messages.
func claimField(source engine.Source) string {
	switch source {
	case engine.Native:
		return "spec.schedulingGroup.podGroupName"
	case engine.Coscheduling:
		return "metadata.labels[" + musterv1alpha1.CoschedulingPodGroupLabel + "]"
	case engine.Volcano:
		return "metadata.annotations[" + musterv1alpha1.VolcanoGroupNameAnnotation + "]"
	default:
		return "metadata.labels[" + musterv1alpha1.GroupLabel + "]"
	}
}
