package lifecycle

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// State is one group's lifecycle state. It is a value: Step returns a new State and never
// modifies the one it was given, so a caller may keep old States (for diffs, or to retry
// a step) safely. The zero State is not usable; make one with New.
type State struct {
	phase     Phase
	since     time.Time
	reason    string
	message   string
	minMember int
	deadline  time.Time // when the current phase's timer fires; zero when it has none

	attempt    int       // admissions so far: the number of the current or last attempt
	admittedAt time.Time // admission of the current attempt; zero before the first
	planned    int       // members in the current attempt's placement
	failures   int       // attempts that failed by timeout
	preempted  int       // attempts ended by preemption
	history    []Attempt // attempts that ended, oldest first; shared, append-only via clip

	obs   Observe   // latest observation; obs.Held is owned by the State
	held  amounts   // obs.Held as exact amounts
	clock time.Time // latest now seen; held is integrated up to here

	readyInAttempt  bool // minMember members were Ready at some point in the current attempt
	everReady       bool
	timeToReady     time.Duration
	heldBeforeReady amounts
	heldChanges     uint64 // how many times heldBeforeReady changed

	cleanupFrom   time.Time // the EvictAll a cleanup is measured from; zero when none is pending
	cleanupReason string
	cleanedUp     bool
	lastCleanup   time.Duration
}

// Attempt records one admission of the group that has ended.
type Attempt struct {
	// Number counts admissions from 1.
	Number int
	// AdmittedAt is when the queue admitted the group for this attempt.
	AdmittedAt time.Time
	// EndedAt is when the attempt failed, finished or was cancelled.
	EndedAt time.Time
	// Stage is the phase the attempt was in when it ended (Binding, Starting, Running or
	// Recovering).
	Stage Phase
	// Reason is ReasonStartTimeout, ReasonMemberFailedToStart, ReasonRecoveryTimeout,
	// ReasonCancelled, ReasonPreempted or ReasonSucceeded.
	Reason string
	// Message explains the reason with counts, e.g. how many members were Ready.
	Message string
	// Preemption, for a ReasonPreempted attempt, says how it was preempted, and
	// PreemptedFor names the group its nodes were taken for. Both are empty for other
	// reasons, and in records written before muster recorded them.
	Preemption   Preemption
	PreemptedFor string
}

// Preemption says how an attempt was preempted: the sub-reason of ReasonPreempted.
type Preemption string

const (
	// ByPriority: a group of higher priority needed the attempt's nodes.
	ByPriority Preemption = "Priority"
	// ByReclaim: the attempt ran on quota its queue borrowed from its cohort, and a
	// group of the lending queue took that quota back.
	ByReclaim Preemption = "Reclaim"
)

// Failed reports whether the attempt failed (timed out, or a member failed to start), as
// opposed to finishing, being preempted or being cancelled.
func (a Attempt) Failed() bool {
	switch a.Reason {
	case ReasonStartTimeout, ReasonMemberFailedToStart, ReasonRecoveryTimeout:
		return true
	}
	return false
}

// New returns the State of a group first seen at now, in Gathering. minMember is the
// number of members that must be placed and Ready together; it must be at least 1.
func New(minMember int, now time.Time) (State, error) {
	if minMember < 1 {
		return State{}, fmt.Errorf("lifecycle: minMember must be at least 1, found %d", minMember)
	}
	return State{
		phase:     Gathering,
		since:     now,
		reason:    ReasonMembersMissing,
		message:   gatheringMessage(Observe{}, minMember),
		minMember: minMember,
		clock:     now,
	}, nil
}

// Phase returns the current phase.
func (s State) Phase() Phase { return s.phase }

// Since returns when the group entered its current phase.
func (s State) Since() time.Time { return s.since }

// Reason returns the CamelCase reason for the current phase or, in Queued, for the latest
// rejection.
func (s State) Reason() string { return s.reason }

// Message returns a human-readable explanation of Reason.
func (s State) Message() string { return s.message }

// MinMember returns the number of members that must be placed and Ready together.
func (s State) MinMember() int { return s.minMember }

// WakeAt returns when the caller must deliver the next Tick: the start or recovery
// deadline, or the end of the backoff delay. It is zero when no timer is pending.
func (s State) WakeAt() time.Time { return s.deadline }

// Attempt returns the number of the current (or last) attempt: how many times the group
// was admitted. It is 0 before the first admission.
func (s State) Attempt() int { return s.attempt }

// AdmittedAt returns when the current (or last) attempt was admitted; zero if never.
func (s State) AdmittedAt() time.Time { return s.admittedAt }

// Planned returns the number of members in the current (or last) attempt's placement.
func (s State) Planned() int { return s.planned }

// Failures returns how many attempts failed by start or recovery timeout. It never
// exceeds MaxRetries+1.
func (s State) Failures() int { return s.failures }

// Preemptions returns how many attempts ended by preemption. They do not count as
// failures: each gives the group one more attempt.
func (s State) Preemptions() int { return s.preempted }

// Attempts returns the attempts that have ended, oldest first: for each, when it was
// admitted and ended, the phase it ended in and why. The slice is a copy.
func (s State) Attempts() []Attempt { return slices.Clone(s.history) }

// Observed returns the latest observation of the group's members (a copy).
func (s State) Observed() Observe {
	o := s.obs
	o.Held = s.obs.Held.DeepCopy()
	return o
}

// TimeToReady returns the time from admission until minMember members were Ready, in
// the latest attempt that got that far, and whether any attempt did.
func (s State) TimeToReady() (time.Duration, bool) { return s.timeToReady, s.everReady }

// HeldBeforeReady returns, per resource, the resource-seconds the group held while it was
// not yet Ready in its current attempt, summed over all attempts (including attempts
// evicted before Ready, and the cleanup that followed them). Units are each resource's
// natural unit times seconds: GPU-seconds, core-seconds, byte-seconds. The sums are
// exact; each value is rounded to float64 once, here. The map is empty if the group
// never held anything before it was Ready.
func (s State) HeldBeforeReady() map[corev1.ResourceName]float64 { return s.heldBeforeReady.floats() }

// HeldBeforeReadyChanges counts the changes of HeldBeforeReady: a caller that read it
// when the count was the same has its amounts. Reading them converts every amount.
func (s State) HeldBeforeReadyChanges() uint64 { return s.heldChanges }

// LastCleanup returns the time from the most recent completed cleanup's EvictAll until an
// observation showed nothing bound and nothing held, and whether any cleanup completed.
// A cleanup still pending when the group is admitted again is abandoned, not measured.
func (s State) LastCleanup() (time.Duration, bool) { return s.lastCleanup, s.cleanedUp }

// CleanupPendingSince returns when the EvictAll of a cleanup still in progress was
// decided, and whether one is in progress.
func (s State) CleanupPendingSince() (time.Time, bool) { return s.cleanupFrom, !s.cleanupFrom.IsZero() }

// String renders the phase, its reason and message, and the pending timer, on one line.
func (s State) String() string {
	wake := "none"
	if !s.deadline.IsZero() {
		wake = s.deadline.Format(time.RFC3339)
	}
	return fmt.Sprintf("%s (%s: %s) wake=%s", s.phase, s.reason, s.message, wake)
}

func gatheringMessage(o Observe, minMember int) string {
	msg := fmt.Sprintf("%d of %d required member pods exist", o.Members, minMember)
	if o.TaskMissing != "" {
		msg += "; " + o.TaskMissing
	}
	return msg
}

// taskNote is "; " and the task short of Ready members, or "" when none is.
func taskNote(o Observe) string {
	if o.TaskNotReady == "" {
		return ""
	}
	return "; " + o.TaskNotReady
}

// gathered reports whether enough members exist for the group to be queued: minMember
// of them, and each task's minimum.
func gathered(o Observe, minMember int) bool {
	return o.Members >= minMember && o.TaskMissing == ""
}
