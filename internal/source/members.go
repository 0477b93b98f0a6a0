package source

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/muster-sched/muster/internal/engine"
)

// CheckMembers checks a group's member pods and their owner against spec, appending each
// problem to spec.Invalid:
//   - a member whose spec.schedulerName is none of schedulerNames (muster's, its
//     Configuration's schedulerName first), naming the pods and the schedulerNames found;
//   - a minimum larger than the replicas the owner declares.
//
// owner, when not nil, is the controller object behind the members (a Job, a Kubeflow
// training job, a JobSet); CheckMembers sets spec.Owner from it. Fewer members than the
// minimum is not a problem here (the group may still be gathering): spec.Owner.Replicas
// lets the diagnosis say how many pods the owner declares. An owner of a kind OwnerRoles
// does not know is recorded with Replicas 0 (unknown); one whose replica fields are
// malformed is a problem.
func CheckMembers(spec *engine.GroupSpec, pods []*corev1.Pod, owner *unstructured.Unstructured, schedulerNames []string) {
	checkSchedulerNames(spec, pods, schedulerNames)
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
// schedulerName, or a mix. Members under different names muster serves are all its own.
func checkSchedulerNames(spec *engine.GroupSpec, pods []*corev1.Pod, schedulerNames []string) {
	byName := map[string][]string{}
	others := 0
	for _, p := range pods {
		name := p.Spec.SchedulerName
		byName[name] = append(byName[name], p.Name)
		if !slices.Contains(schedulerNames, name) {
			others++
		}
	}
	if others == 0 {
		return
	}
	if len(byName) == 1 {
		for name, members := range byName {
			spec.Invalid = append(spec.Invalid, fmt.Sprintf("spec.schedulerName: %q on every member (%s): expected %s",
				name, podNames(members), ExpectedSchedulerNames(schedulerNames)))
		}
		return
	}
	spec.Invalid = append(spec.Invalid, fmt.Sprintf("spec.schedulerName: members disagree: %s: expected %s on every member",
		describeSplit(byName), ExpectedSchedulerNames(schedulerNames)))
}

// ExpectedSchedulerNames renders the schedulerNames muster serves for a message:
// `"muster"`, or `one of "muster", "volcano"`.
func ExpectedSchedulerNames(schedulerNames []string) string {
	quoted := make([]string, len(schedulerNames))
	for i, name := range schedulerNames {
		quoted[i] = strconv.Quote(name)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return "one of " + strings.Join(quoted, ", ")
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
