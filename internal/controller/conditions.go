package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// ReasonInvalidGroup is the reason of the Impossible condition of a group whose spec
// is invalid.
const ReasonInvalidGroup = "InvalidGroup"

// Reasons of the conditions that are False, each saying why that condition does not hold.
const (
	// ReasonPending: muster has not seen the group's object or enough of its members yet.
	ReasonPending = "Pending"
	// ReasonNotAdmitted: the group holds no placement, so its pods cannot be Ready.
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonMembersNotReady: the group is admitted and fewer than minMember members are Ready.
	ReasonMembersNotReady = "MembersNotReady"
	// ReasonNotWaiting: the group is not waiting for admission.
	ReasonNotWaiting = "NotWaiting"
	// ReasonFeasible: nothing rules the group out for good.
	ReasonFeasible = "Feasible"
	// ReasonNotEvicted: the group's current attempt was not evicted.
	ReasonNotEvicted = "NotEvicted"
	// ReasonRetriesLeft: the group has not failed for good.
	ReasonRetriesLeft = "RetriesLeft"
	// ReasonAdmitted: the group was admitted with a complete placement.
	ReasonAdmitted = "Admitted"
)

// Conditions returns a group's conditions from its engine status. Each type is True or
// False, and each has a reason and message of its own that say what that condition
// means for the group now: a waiting group is Unschedulable with the admission pass's
// reason, while its Failed condition says how many retries are left.
func Conditions(st engine.Status) []metav1.Condition {
	p := st.Phase
	admitted := p == lifecycle.Binding || p == lifecycle.Starting || p == lifecycle.Running ||
		p == lifecycle.Recovering || p == lifecycle.Finished
	return []metav1.Condition{
		admittedCondition(st, admitted),
		podsReadyCondition(st, admitted),
		unschedulableCondition(st),
		impossibleCondition(st),
		evictedCondition(st),
		failedCondition(st),
	}
}

// condition builds one condition.
func condition(typ string, on bool, reason, message string) metav1.Condition {
	status := metav1.ConditionFalse
	if on {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

// phaseReason is the lifecycle's reason and message for the group's phase, or Pending
// before muster has seen the group whole.
func phaseReason(st engine.Status) (string, string) {
	reason, message := st.Reason, st.Message
	if reason == "" {
		reason = ReasonPending
	}
	if message == "" {
		message = "waiting for the group's object and members"
	}
	return reason, message
}

func admittedCondition(st engine.Status, admitted bool) metav1.Condition {
	if admitted {
		return condition(ConditionAdmitted, true, ReasonAdmitted,
			fmt.Sprintf("attempt %d admitted with a placement for its members; phase %s", st.Attempt, st.Phase))
	}
	if st.Phase == lifecycle.Queued && st.Waiting != "" {
		return condition(ConditionAdmitted, false, st.WaitingKind, "not admitted: "+st.Waiting)
	}
	reason, message := phaseReason(st)
	return condition(ConditionAdmitted, false, reason, message)
}

func podsReadyCondition(st engine.Status, admitted bool) metav1.Condition {
	o := st.Observed
	switch {
	case st.Phase == lifecycle.Running || st.Phase == lifecycle.Finished:
		// The lifecycle's reason says how the group got there: PodsReady, Recovered,
		// Succeeded.
		reason, _ := phaseReason(st)
		return condition(ConditionPodsReady, true, reason,
			fmt.Sprintf("%d of %d members Ready or Succeeded, minMember %d", o.Ready, o.Members, st.Spec.MinMember))
	case admitted:
		return condition(ConditionPodsReady, false, ReasonMembersNotReady,
			fmt.Sprintf("%d of minMember %d members Ready (%d bound); phase %s", o.Ready, st.Spec.MinMember, o.Bound, st.Phase))
	}
	return condition(ConditionPodsReady, false, ReasonNotAdmitted, "the group is not admitted, so no member runs")
}

func unschedulableCondition(st engine.Status) metav1.Condition {
	if st.Phase == lifecycle.Queued && st.Waiting != "" {
		return condition(ConditionUnschedulable, true, st.WaitingKind, st.Waiting)
	}
	return condition(ConditionUnschedulable, false, ReasonNotWaiting, phaseText(st, "the group is not waiting for admission"))
}

func impossibleCondition(st engine.Status) metav1.Condition {
	switch {
	case st.Invalid != "":
		return condition(ConditionImpossible, true, ReasonInvalidGroup, st.Invalid)
	case st.Phase == lifecycle.Impossible && st.Waiting != "":
		return condition(ConditionImpossible, true, st.WaitingKind, st.Waiting)
	case st.Phase == lifecycle.Impossible:
		reason, message := phaseReason(st)
		return condition(ConditionImpossible, true, reason, message)
	}
	return condition(ConditionImpossible, false, ReasonFeasible, "nothing found rules the group out for good")
}

func evictedCondition(st engine.Status) metav1.Condition {
	if st.Phase == lifecycle.Backoff {
		reason, message := phaseReason(st)
		return condition(ConditionEvicted, true, reason, message)
	}
	if a, ok := lastAttempt(st); ok && preemptedLast(st) {
		return condition(ConditionEvicted, true, a.Reason, a.Message+"; queued again in its place")
	}
	return condition(ConditionEvicted, false, ReasonNotEvicted, phaseText(st, "the group's current attempt was not evicted"))
}

func failedCondition(st engine.Status) metav1.Condition {
	if st.Phase == lifecycle.Failed {
		reason, message := phaseReason(st)
		return condition(ConditionFailed, true, reason, message)
	}
	return condition(ConditionFailed, false, ReasonRetriesLeft,
		fmt.Sprintf("%d failed attempt(s) of %d retries allowed", st.Failures, st.Policy.MaxRetries))
}

// preemptedLast reports whether a group waits again because its last attempt was
// preempted: it is queued in its place (or gathers its recreated members), and stays
// Evicted until it is admitted again.
func preemptedLast(st engine.Status) bool {
	a, ok := lastAttempt(st)
	return ok && a.Reason == lifecycle.ReasonPreempted && a.Number == st.Attempt &&
		(st.Phase == lifecycle.Queued || st.Phase == lifecycle.Gathering)
}

// lastAttempt returns the group's latest attempt, if it had one.
func lastAttempt(st engine.Status) (lifecycle.Attempt, bool) {
	if len(st.Attempts) == 0 {
		return lifecycle.Attempt{}, false
	}
	return st.Attempts[len(st.Attempts)-1], true
}

// phaseText appends the group's phase to a message, when it has one.
func phaseText(st engine.Status, message string) string {
	if st.Phase == "" {
		return message
	}
	return fmt.Sprintf("%s (phase %s)", message, st.Phase)
}
