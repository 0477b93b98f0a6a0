package lifecycle

// Phase is the stage of a group's lifecycle. The zero value is not a valid phase; a State
// made by New starts in Gathering.
type Phase string

const (
	// Gathering: fewer member pods exist than minMember. The group holds nothing and is not
	// in any queue.
	Gathering Phase = "Gathering"
	// Queued: at least minMember members exist and the group waits for admission.
	Queued Phase = "Queued"
	// Binding: the queue admitted the group with a placement; its members are being bound.
	Binding Phase = "Binding"
	// Starting: the planned members are bound; the group waits for minMember to be Ready.
	Starting Phase = "Starting"
	// Running: at least minMember members are Ready (or Succeeded).
	Running Phase = "Running"
	// Recovering: a Running group lost members below minMember and waits for replacements
	// until its recovery timeout.
	Recovering Phase = "Recovering"
	// Backoff: an attempt failed, or was preempted, and every member was evicted; the
	// group waits out its backoff delay before it is queued again.
	Backoff Phase = "Backoff"
	// Impossible: the group's shape cannot fit even an empty cluster. It is not retried on a
	// timer, only re-checked when nodes change.
	Impossible Phase = "Impossible"
	// Stopped: a user stopped the group (muster.dev/stopped: "true"): every member it held
	// was evicted and it stays out of the queue until it is resumed.
	Stopped Phase = "Stopped"
	// Failed: every allowed attempt failed, or the members' owner failed. Terminal.
	Failed Phase = "Failed"
	// Finished: minMember members Succeeded and none is still running. Terminal.
	Finished Phase = "Finished"
	// Cancelled: the group or its owner was deleted. Terminal.
	Cancelled Phase = "Cancelled"
)

// Terminal reports whether p is a phase the group never leaves: Failed, Finished or
// Cancelled.
func (p Phase) Terminal() bool {
	return p == Failed || p == Finished || p == Cancelled
}

// Reasons are the CamelCase reasons carried by Transition and EvictAll actions, fit for
// Kubernetes Events and Conditions.
const (
	// ReasonStopped: a user stopped the group.
	ReasonStopped = "Stopped"
	// ReasonResumed: a user resumed a stopped group.
	ReasonResumed = "Resumed"
	// ReasonMembersMissing: fewer member pods exist than minMember.
	ReasonMembersMissing = "MembersMissing"
	// ReasonMembersPresent: minMember member pods exist; the group is queued.
	ReasonMembersPresent = "MembersPresent"
	// ReasonUnschedulable: an admission attempt found no placement now.
	ReasonUnschedulable = "Unschedulable"
	// ReasonImpossible: the group's shape cannot fit even an empty cluster.
	ReasonImpossible = "Impossible"
	// ReasonNodesChanged: the node set changed, so an Impossible group is re-checked.
	ReasonNodesChanged = "NodesChanged"
	// ReasonAdmitted: the queue admitted the group with a complete placement.
	ReasonAdmitted = "Admitted"
	// ReasonBound: the planned members are bound to their nodes.
	ReasonBound = "Bound"
	// ReasonPodsReady: minMember members are Ready or Succeeded.
	ReasonPodsReady = "PodsReady"
	// ReasonMemberLost: a Running group has fewer than minMember Ready members.
	ReasonMemberLost = "MemberLost"
	// ReasonRecovered: a Recovering group has minMember Ready members again.
	ReasonRecovered = "Recovered"
	// ReasonSucceeded: minMember members Succeeded and none is still running.
	ReasonSucceeded = "Succeeded"
	// ReasonStartTimeout: the group was not Ready within its start timeout of admission.
	ReasonStartTimeout = "StartTimeout"
	// ReasonMemberFailedToStart: a member placed in the attempt failed before the group
	// was Ready, nothing replaces it, and the members left cannot make minMember, or
	// the minimum of the member's task: the attempt is over at once, without waiting
	// for the start timeout.
	ReasonMemberFailedToStart = "MemberFailedToStart"
	// ReasonRecoveryTimeout: a Recovering group was not whole again within its recovery
	// timeout.
	ReasonRecoveryTimeout = "RecoveryTimeout"
	// ReasonBackoffExpired: the backoff delay after a failed attempt has passed.
	ReasonBackoffExpired = "BackoffExpired"
	// ReasonRetryLimitExceeded: an attempt failed and no retries are left.
	ReasonRetryLimitExceeded = "RetryLimitExceeded"
	// ReasonCancelled: the group or its owner was deleted.
	ReasonCancelled = "Cancelled"
	// ReasonPreempted: the group was evicted to make room for a group of higher
	// priority; it is queued again after a backoff, and the attempt does not count as
	// failed.
	ReasonPreempted = "Preempted"
	// ReasonOwnerFailed: the workload controller behind the members failed for good and
	// creates no more of them; the group fails at once.
	ReasonOwnerFailed = "OwnerFailed"
)
