package lifecycle

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Event is something that happened to a group. The set is closed: Observe, Admitted,
// Rejected, NodesChanged, Cancel, Preempt, Tick and OwnerFailed.
type Event interface {
	isEvent()
}

// Observe is a level-triggered observation of the group's member pods. Each Observe
// replaces the previous one; counts are not deltas.
type Observe struct {
	// Members counts member pods that exist, are not being deleted and are not
	// terminal-failed (Succeeded pods count). A pod being deleted is in no count but Held.
	Members int
	// Bound counts the Members that are bound to a node.
	Bound int
	// Ready counts the Members that are Ready or Succeeded.
	Ready int
	// Succeeded counts the Members that Succeeded.
	Succeeded int
	// Failed counts member pods in phase Failed (not included in Members).
	Failed int
	// Held is the sum of the requests of the bound, non-terminal members: what the group
	// holds on its nodes now.
	Held corev1.ResourceList
	// Placed counts the member pods placed in the current attempt: by its admission, or
	// alone since (replacements), failed ones included; zero once they are evicted.
	Placed int
	// PlacedFailed counts the Placed members that failed on their own and that nothing
	// replaces: phase Failed, not deleted, not rejected by the kubelet at admission
	// (such a member is placed again), and without a controller owner (a controller
	// creates a replacement, which is placed alone).
	PlacedFailed int
	// Failure describes one of the PlacedFailed members, e.g. "worker-3: init
	// container fetch exited with 1 (Error)", for the reason a failed attempt gives.
	Failure string
	// TaskMissing, when set, says which task of the group has fewer member pods than
	// its minimum (a Volcano PodGroup's spec.minTaskMember): the group gathers until
	// it has them, as it does until it has minMember members.
	TaskMissing string
	// TaskNotReady, when set, says which task has fewer Ready (or Succeeded) members
	// than its minimum: the group is not whole, however many members are Ready.
	TaskNotReady string
	// TaskFailed, when set, says which task's members placed in the current attempt,
	// less those of them counted in PlacedFailed, are fewer than its minimum: the
	// attempt cannot be whole, however many members of other tasks are placed.
	TaskFailed string
}

// Admitted reports that the queue admitted the group with a placement for Planned members.
type Admitted struct {
	// Planned is the number of members the placement binds.
	Planned int
}

// Rejected reports that an admission attempt failed.
type Rejected struct {
	// Impossible is true when the group cannot fit even an empty cluster; false when it
	// is merely unschedulable now.
	Impossible bool
	// Reason is the placement diagnosis, e.g. "0/8 nodes: 8 insufficient nvidia.com/gpu".
	Reason string
}

// NodesChanged reports that the set of nodes or their capacity changed, so an Impossible
// group may fit now.
type NodesChanged struct{}

// Cancel reports that the group, or its owner, was deleted.
type Cancel struct{}

// Preempt reports that the queue takes an admitted group's nodes for a group of higher
// priority. The attempt ends without counting as failed, every member is evicted, and
// the group is queued again at once in the place it had (Enqueue.InPlace), or gathers
// its members first if it lost some. A group not admitted (or whose attempt already
// ended) ignores it.
type Preempt struct {
	// Message says for whom, e.g. "preempted by default/big (priority 100)".
	Message string
	// How is ByPriority or ByReclaim, and For the key of the group the nodes are
	// taken for; the ended attempt records both.
	How Preemption
	For string
}

// Tick reports that time passed; due timers fire. Deliver it at or after State.WakeAt.
type Tick struct{}

// OwnerFailed reports that the workload controller behind the group's members (a batch
// Job past its backoffLimit, a failed JobSet or Kubeflow job) has failed for good: it
// creates no more members, so the group fails at once, whatever its phase, instead of
// waiting for members that will not come. It does not count as a failed attempt, and
// evicts nothing: the owner cleans up its pods (a failed Job keeps its failed ones).
type OwnerFailed struct {
	// Message says which owner and why, e.g. "Job default/train failed:
	// BackoffLimitExceeded: Job has reached the specified backoff limit".
	Message string
}

// Stop reports that a user stopped the group: an attempt in progress ends and every
// member is evicted, and the group leaves the queue until Resume. Message says who or what
// stopped it.
type Stop struct{ Message string }

// Unstop reports that a stopped group may be queued again.
type Unstop struct{}

func (Stop) isEvent()         {}
func (Unstop) isEvent()       {}
func (Observe) isEvent()      {}
func (Admitted) isEvent()     {}
func (Rejected) isEvent()     {}
func (NodesChanged) isEvent() {}
func (Cancel) isEvent()       {}
func (Preempt) isEvent()      {}
func (Tick) isEvent()         {}
func (OwnerFailed) isEvent()  {}

// Action is a decision the caller must carry out. The set is closed: Enqueue, Dequeue,
// EvictAll, Transition and Released.
type Action interface {
	isAction()
	String() string
}

// Enqueue makes the group eligible for admission.
type Enqueue struct {
	// Requeued is true after a failed attempt: the queue orders the group behind groups
	// of its priority that never failed.
	Requeued bool
	// InPlace is true when the group's last attempt was preempted and it has not been
	// admitted since: it keeps the queue time it had before that admission, so that it
	// goes back where it was in order rather than to the back.
	InPlace bool
}

// Dequeue removes the group from its queue. Removing a group that is not queued is a
// no-op for the caller.
type Dequeue struct{}

// EvictAll deletes every member of the group, releasing everything it holds.
type EvictAll struct {
	// Reason is one of ReasonStartTimeout, ReasonMemberFailedToStart,
	// ReasonRecoveryTimeout, ReasonRetryLimitExceeded, ReasonCancelled or
	// ReasonPreempted.
	Reason string
	// Message says why, for Events.
	Message string
}

// Transition reports a change of phase, for Events and Conditions.
type Transition struct {
	// From and To are the phases before and after.
	From, To Phase
	// Reason is a CamelCase Reason constant.
	Reason string
	// Message is a human-readable explanation.
	Message string
}

// Released reports that, after an EvictAll, an observation showed the group holding
// nothing: no member bound and Held empty. It carries the cleanup time, for metrics.
type Released struct {
	// Reason is the Reason of the EvictAll that started the cleanup.
	Reason string
	// After is the time from that EvictAll to the observation.
	After time.Duration
}

func (Enqueue) isAction()    {}
func (Dequeue) isAction()    {}
func (EvictAll) isAction()   {}
func (Transition) isAction() {}
func (Released) isAction()   {}

// String renders the action on one line, for logs and test output.
func (a Enqueue) String() string {
	s := "Enqueue"
	if a.Requeued {
		s += " requeued"
	}
	if a.InPlace {
		s += " in-place"
	}
	return s
}

// String renders the action on one line, for logs and test output.
func (Dequeue) String() string { return "Dequeue" }

// String renders the action on one line, for logs and test output.
func (a EvictAll) String() string {
	return fmt.Sprintf("EvictAll %s: %s", a.Reason, a.Message)
}

// String renders the action on one line, for logs and test output.
func (a Transition) String() string {
	return fmt.Sprintf("Transition %s -> %s %s: %s", a.From, a.To, a.Reason, a.Message)
}

// String renders the action on one line, for logs and test output.
func (a Released) String() string {
	return fmt.Sprintf("Released %s after %s", a.Reason, a.After)
}

// String renders the observation on one line, for logs and test output.
func (o Observe) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "members=%d bound=%d ready=%d succeeded=%d failed=%d held=",
		o.Members, o.Bound, o.Ready, o.Succeeded, o.Failed)
	b.WriteString(formatResourceList(o.Held))
	if o.Placed > 0 {
		fmt.Fprintf(&b, " placed=%d placed-failed=%d", o.Placed, o.PlacedFailed)
	}
	if o.TaskMissing != "" {
		fmt.Fprintf(&b, " task-missing=%q", o.TaskMissing)
	}
	if o.TaskNotReady != "" {
		fmt.Fprintf(&b, " task-not-ready=%q", o.TaskNotReady)
	}
	if o.TaskFailed != "" {
		fmt.Fprintf(&b, " task-failed=%q", o.TaskFailed)
	}
	return b.String()
}
