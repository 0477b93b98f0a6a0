package source

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/muster-sched/muster/internal/engine"
)

// CheckMembers checks a group's member pods and their owner against spec, appending each
// problem to spec.Invalid:
//   - a member whose spec.schedulerName is not schedulerName (muster's), naming the pods
//     and the schedulerNames found;
//   - a minimum larger than the replicas the owner declares.
//
// owner, when not nil, is the controller object behind the members (a Job, a Kubeflow
// training job, a JobSet); CheckMembers sets spec.Owner from it. Fewer members than the
// minimum is not a problem here (the group may still be gathering): spec.Owner.Replicas
// lets the diagnosis say how many pods the owner declares. An owner of a kind OwnerRoles
// does not know is recorded with Replicas 0 (unknown); one whose replica fields are
// malformed is a problem.
func CheckMembers(spec *engine.GroupSpec, pods []*corev1.Pod, owner *unstructured.Unstructured, schedulerName string) {
	checkSchedulerNames(spec, pods, schedulerName)
	if owner == nil {
		return
	}
	spec.Owner = &engine.Owner{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName()}
	replicas, err := OwnerReplicas(owner)
	switch {
	case errors.Is(err, ErrUnknownOwnerKind):
		return
	case err != nil:
		spec.Invalid = append(spec.Invalid, "owner "+err.Error())
		return
	}
	spec.Owner.Replicas = replicas
	if spec.MinMember > replicas {
		spec.Invalid = append(spec.Invalid, fmt.Sprintf("%s: %d: larger than the %d replicas %s %s declares",
			minMemberField(spec.Source), spec.MinMember, replicas, owner.GetKind(), owner.GetName()))
	}
}

// checkSchedulerNames records members that are not muster's: all of them under one other
// schedulerName, or a mix.
func checkSchedulerNames(spec *engine.GroupSpec, pods []*corev1.Pod, schedulerName string) {
	byName := map[string][]string{}
	for _, p := range pods {
		byName[p.Spec.SchedulerName] = append(byName[p.Spec.SchedulerName], p.Name)
	}
	if _, ours := byName[schedulerName]; len(byName) == 0 || (ours && len(byName) == 1) {
		return
	}
	if len(byName) == 1 {
		for name, members := range byName {
			spec.Invalid = append(spec.Invalid, fmt.Sprintf("spec.schedulerName: %q on every member (%s): expected %q",
				name, podNames(members), schedulerName))
		}
		return
	}
	spec.Invalid = append(spec.Invalid, fmt.Sprintf("spec.schedulerName: members disagree: %s: expected %q on every member",
		describeSplit(byName), schedulerName))
}

// Gathering explains a group that has fewer members than its minimum: how many pods joined,
// how they join, the minimum, and (when owner is known) what the owner declares, e.g.
// "members joined: 8 of the 9 spec.minMember requires (pods that carry the
// scheduling.x-k8s.io/pod-group label); MPIJob pi declares 9 replicas (Launcher 1, Worker 8)".
// When the owner declares at least the minimum, the missing members are replicas that have
// not joined the group, such as a launcher without the group label.
func Gathering(spec engine.GroupSpec, members int, owner *unstructured.Unstructured) string {
	msg := fmt.Sprintf("members joined: %d of the %d %s requires (pods that %s)",
		members, spec.MinMember, minMemberField(spec.Source), JoinedBy(spec.Source))
	if owner == nil {
		return msg
	}
	desc, err := DescribeOwner(owner)
	if err != nil {
		return msg + "; owner " + err.Error()
	}
	return msg + "; " + desc
}
