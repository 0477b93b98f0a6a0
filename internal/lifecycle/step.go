package lifecycle

import (
	"fmt"
	"slices"
	"time"
)

// Step applies one event at time now to the group's state under policy p and returns the
// next state and the actions the caller must carry out, in order. It never modifies s.
//
// Every event first integrates what the group held since the previous event (see
// HeldBeforeReady). Timers fire only on Tick. Terminal phases ignore every event except
// Observe, which still completes cleanup accounting. Events that do not apply to the
// current phase (an Admitted that raced with members disappearing, a Rejected for a
// group no longer queued) are ignored: they return the state with no actions.
func Step(s State, p Policy, ev Event, now time.Time) (State, []Action) {
	m := machine{s: s.advance(now), p: p, now: now}
	if obs, ok := ev.(Observe); ok {
		m.observe(obs)
		return m.s, m.actions
	}
	if m.s.phase.Terminal() {
		return m.s, nil
	}
	switch ev := ev.(type) {
	case Admitted:
		m.admitted(ev)
	case Rejected:
		m.rejected(ev)
	case NodesChanged:
		if m.s.phase == Impossible {
			m.enqueueOrGather(ReasonNodesChanged, "node set or capacity changed; re-checking the group")
		}
	case Cancel:
		m.cancel()
	case Preempt:
		m.preempt(ev)
	case Tick:
		m.tick()
	case OwnerFailed:
		m.ownerFailed(ev.Message)
	case Stop:
		m.stop(ev.Message)
	case Unstop:
		m.resume()
	}
	return m.s, m.actions
}

// machine carries one Step's state, policy, time and the actions decided so far.
type machine struct {
	s       State
	p       Policy
	now     time.Time
	actions []Action
}

func (m *machine) emit(a Action) { m.actions = append(m.actions, a) }

// to moves the group to phase, records reason and message, and emits a Transition.
func (m *machine) to(phase Phase, reason, message string) {
	m.emit(Transition{From: m.s.phase, To: phase, Reason: reason, Message: message})
	m.s.phase, m.s.since = phase, m.now
	m.s.reason, m.s.message = reason, message
	m.s.deadline = time.Time{}
}

// observe records a new observation, completes a pending cleanup if nothing is held any
// more, and advances the phase as far as the observation allows.
func (m *machine) observe(o Observe) {
	if sameList(o.Held, m.s.obs.Held) {
		// Most observations hold what the last did (a member became Ready): the state
		// keeps its copy, and its amounts.
		o.Held = m.s.obs.Held
	} else {
		o.Held = o.Held.DeepCopy()
		m.s.held = amountsOf(o.Held)
	}
	m.s.obs = o
	if !m.s.cleanupFrom.IsZero() && o.Bound == 0 && len(m.s.held) == 0 {
		after := max(m.now.Sub(m.s.cleanupFrom), 0) // a clock that went backwards measures 0
		m.emit(Released{Reason: m.s.cleanupReason, After: after})
		m.s.cleanupFrom, m.s.cleanupReason = time.Time{}, ""
		m.s.cleanedUp, m.s.lastCleanup = true, after
	}
	minMember := m.s.minMember
	switch m.s.phase {
	case Gathering:
		if gathered(o, minMember) {
			m.enqueue(ReasonMembersPresent, fmt.Sprintf("%d of %d required member pods exist", o.Members, minMember))
		} else {
			m.s.message = gatheringMessage(o, minMember)
		}
	case Queued, Impossible:
		if !gathered(o, minMember) {
			if m.s.phase == Queued {
				m.emit(Dequeue{})
			}
			m.to(Gathering, ReasonMembersMissing, gatheringMessage(o, minMember))
		}
	case Binding, Starting, Running, Recovering:
		m.progress()
	}
}

// progress moves an admitted group forward (or, when Running, into Recovering) as far as
// the latest observation allows. Several transitions may happen in one step, e.g.
// Binding → Starting → Running when a late observation shows everything Ready.
func (m *machine) progress() {
	o, minMember := m.s.obs, m.s.minMember
	if m.s.phase == Binding && (o.Bound >= m.s.planned || o.Bound >= minMember) {
		deadline := m.s.deadline
		m.to(Starting, ReasonBound, fmt.Sprintf("%d of %d planned members bound", o.Bound, m.s.planned))
		m.s.deadline = deadline // the start timeout runs from admission, across Binding and Starting
	}
	whole := o.Ready >= minMember && o.Members >= minMember && o.TaskNotReady == ""
	if (m.s.phase == Starting || m.s.phase == Recovering) && whole {
		m.becomeReady()
	}
	if (m.s.phase == Binding || m.s.phase == Starting) && o.PlacedFailed > 0 && (o.Placed-o.PlacedFailed < minMember || o.TaskFailed != "") {
		// A member failed while starting (restartPolicy Never) and nothing replaces it:
		// the attempt cannot be whole, in all or in one of its tasks, and waiting for
		// the start timeout would only hold the others' resources.
		failure := o.Failure
		if failure == "" {
			failure = "a member failed"
		}
		msg := fmt.Sprintf("%s; %d of %d members placed in attempt %d failed before the group was ready, leaving %d of %d required",
			failure, o.PlacedFailed, o.Placed, m.s.attempt, o.Placed-o.PlacedFailed, minMember)
		if o.TaskFailed != "" {
			msg += "; " + o.TaskFailed
		}
		m.fail(ReasonMemberFailedToStart, msg)
		return
	}
	running := o.Members - o.Succeeded
	if m.s.phase == Running && running <= 0 && o.Succeeded >= minMember {
		m.endAttempt(ReasonSucceeded, members(o.Succeeded)+" succeeded")
		m.to(Finished, ReasonSucceeded, fmt.Sprintf("%d of %d required members succeeded and none is running", o.Succeeded, minMember))
		return
	}
	if m.s.phase == Running && !whole {
		m.to(Recovering, ReasonMemberLost, fmt.Sprintf("%d of %d required members ready (%d exist, %d failed); recovery-timeout %s%s",
			o.Ready, minMember, o.Members, o.Failed, m.p.RecoveryTimeout, taskNote(o)))
		m.s.deadline = m.now.Add(m.p.RecoveryTimeout)
	}
}

// becomeReady moves a Starting or Recovering group to Running and, the first time in an
// attempt, records the time to Ready and stops integrating held resources.
func (m *machine) becomeReady() {
	o := m.s.obs
	if m.s.phase == Recovering {
		m.to(Running, ReasonRecovered, fmt.Sprintf("%d of %d required members ready again", o.Ready, m.s.minMember))
	} else {
		m.to(Running, ReasonPodsReady, fmt.Sprintf("%d of %d required members ready %s after admission",
			o.Ready, m.s.minMember, m.now.Sub(m.s.admittedAt)))
	}
	if !m.s.readyInAttempt {
		m.s.readyInAttempt = true
		m.s.everReady, m.s.timeToReady = true, m.now.Sub(m.s.admittedAt)
	}
}

// enqueue moves the group to Queued and asks the caller to enqueue it, behind groups that
// never failed if this one has.
func (m *machine) enqueue(reason, message string) {
	m.to(Queued, reason, message)
	m.emit(Enqueue{Requeued: m.s.failures > 0, InPlace: m.lastPreempted()})
}

// lastPreempted reports whether the group's last attempt ended by preemption: the
// group has not been admitted since, so it is owed its place in the queue.
func (m *machine) lastPreempted() bool {
	n := len(m.s.history)
	return n > 0 && m.s.history[n-1].Reason == ReasonPreempted && m.s.history[n-1].Number == m.s.attempt
}

// enqueueOrGather queues the group if enough members exist, or goes back to Gathering.
func (m *machine) enqueueOrGather(reason, message string) {
	if !gathered(m.s.obs, m.s.minMember) {
		m.to(Gathering, ReasonMembersMissing, gatheringMessage(m.s.obs, m.s.minMember))
		return
	}
	m.enqueue(reason, message)
}

// admitted starts a new attempt for a Queued group: its start timeout runs from now.
func (m *machine) admitted(a Admitted) {
	if m.s.phase != Queued {
		return
	}
	m.s.attempt++
	m.s.admittedAt, m.s.planned = m.now, a.Planned
	m.s.readyInAttempt = false
	// A cleanup still pending cannot be told apart from the new attempt's members any
	// more, so it is abandoned rather than measured against them.
	m.s.cleanupFrom, m.s.cleanupReason = time.Time{}, ""
	m.to(Binding, ReasonAdmitted, fmt.Sprintf("attempt %d of %d admitted with a placement for %s; start-timeout %s",
		m.s.attempt, m.attemptsAllowed(), members(a.Planned), m.p.StartTimeout))
	m.s.deadline = m.now.Add(m.p.StartTimeout)
	// The group advances on the next Observe, not on the latest one: that was taken
	// before the admission and may still count members evicted from an earlier attempt.
}

// rejected records a failed admission attempt. An Impossible verdict takes the group out
// of the queue until nodes change; an unschedulable one only updates the reason.
func (m *machine) rejected(r Rejected) {
	if m.s.phase != Queued {
		return
	}
	if !r.Impossible {
		m.s.reason, m.s.message = ReasonUnschedulable, r.Reason
		return
	}
	m.emit(Dequeue{})
	m.to(Impossible, ReasonImpossible, r.Reason)
}

// cancel releases everything: the group leaves the queue, every member is evicted, and
// an attempt in progress is recorded as cancelled.
func (m *machine) cancel() {
	const message = "the group or its owner was deleted"
	if m.attemptActive() {
		m.endAttempt(ReasonCancelled, message)
	}
	m.emit(Dequeue{})
	m.evict(ReasonCancelled, message)
	m.to(Cancelled, ReasonCancelled, message)
}

// stop ends an attempt in progress, evicting every member, takes the group out of the
// queue and keeps it Stopped. A stopped attempt is not a failure: no retry is spent.
func (m *machine) stop(message string) {
	if m.s.phase == Stopped {
		return
	}
	if m.attemptActive() {
		m.endAttempt(ReasonStopped, message)
		m.evict(ReasonStopped, message)
	}
	m.emit(Dequeue{})
	m.to(Stopped, ReasonStopped, message)
}

// resume queues a stopped group again, or lets it gather its members first.
func (m *machine) resume() {
	if m.s.phase != Stopped {
		return
	}
	m.enqueueOrGather(ReasonResumed, "resumed: queued again")
}

// ownerFailed fails the group for good because its owner did: the group leaves the
// queue and an attempt in progress ends. Its members are the owner's to clean up: a
// failed Job deletes its running pods and keeps its failed ones for their logs, which
// an eviction would destroy.
func (m *machine) ownerFailed(message string) {
	if m.attemptActive() {
		m.endAttempt(ReasonOwnerFailed, message)
	}
	m.emit(Dequeue{})
	m.to(Failed, ReasonOwnerFailed, message)
}

// tick fires the current phase's timer if it is due.
func (m *machine) tick() {
	if m.s.deadline.IsZero() || m.now.Before(m.s.deadline) {
		return
	}
	o, minMember := m.s.obs, m.s.minMember
	switch m.s.phase {
	case Binding, Starting:
		m.fail(ReasonStartTimeout, fmt.Sprintf("start-timeout %s expired in %s with %d of %d required members ready (%d exist, %d bound, %d failed)%s",
			m.p.StartTimeout, m.s.phase, o.Ready, minMember, o.Members, o.Bound, o.Failed, taskNote(o)))
	case Recovering:
		m.fail(ReasonRecoveryTimeout, fmt.Sprintf("recovery-timeout %s expired with %d of %d required members ready (%d exist, %d failed)%s",
			m.p.RecoveryTimeout, o.Ready, minMember, o.Members, o.Failed, taskNote(o)))
	case Backoff:
		if m.s.reason == ReasonPreempted {
			// A record written before preemption requeued in place (see Resume).
			m.enqueueOrGather(ReasonBackoffExpired, fmt.Sprintf("backoff after preempted attempt %d expired; requeued", m.s.attempt))
			return
		}
		m.enqueueOrGather(ReasonBackoffExpired, fmt.Sprintf("backoff after failed attempt %d expired; requeued behind groups that never failed", m.s.attempt))
	}
}

// preempt ends an admitted group's attempt for a group of higher priority: every
// member is evicted and the group is queued again at once, in the place it had before
// its admission (Enqueue.InPlace), without a failure and without backing off: being
// preempted says nothing against the group. A group that lost members goes back to
// Gathering and is queued in its place when they are back.
func (m *machine) preempt(p Preempt) {
	if !m.attemptActive() {
		return
	}
	m.endAttempt(ReasonPreempted, p.Message)
	last := &m.s.history[len(m.s.history)-1]
	last.Preemption, last.PreemptedFor = p.How, p.For
	m.s.preempted++
	m.evict(ReasonPreempted, p.Message)
	m.enqueueOrGather(ReasonPreempted, p.Message+"; queued again in its place")
}

// attemptsAllowed is the policy's attempts plus one for each preempted attempt.
func (m *machine) attemptsAllowed() int { return m.p.maxAttempts() + m.s.preempted }

// fail ends the current attempt as failed and evicts every member. The group backs off
// and retries, or, when no retries are left, fails for good.
func (m *machine) fail(reason, message string) {
	m.endAttempt(reason, message)
	m.s.failures++
	if m.s.failures >= m.p.maxAttempts() {
		final := fmt.Sprintf("%d of %d attempts failed; last: %s", m.s.failures, m.p.maxAttempts(), message)
		m.evict(ReasonRetryLimitExceeded, final)
		m.to(Failed, ReasonRetryLimitExceeded, final)
		return
	}
	delay := m.p.Backoff(m.s.failures)
	m.evict(reason, message)
	m.to(Backoff, reason, fmt.Sprintf("%s; retry %d of %d in %s", message, m.s.failures, m.p.maxAttempts()-1, delay))
	m.s.deadline = m.now.Add(delay)
}

// evict asks the caller to delete every member and starts measuring the cleanup, unless
// an earlier cleanup is still in progress (it is measured from its own EvictAll).
func (m *machine) evict(reason, message string) {
	m.emit(EvictAll{Reason: reason, Message: message})
	if m.s.cleanupFrom.IsZero() {
		m.s.cleanupFrom, m.s.cleanupReason = m.now, reason
	}
}

// attemptActive reports whether the group is admitted and its attempt has not ended.
func (m *machine) attemptActive() bool {
	switch m.s.phase {
	case Binding, Starting, Running, Recovering:
		return true
	}
	return false
}

// endAttempt appends the current attempt to the history.
func (m *machine) endAttempt(reason, message string) {
	m.s.history = append(slices.Clip(m.s.history), Attempt{
		Number:     m.s.attempt,
		AdmittedAt: m.s.admittedAt,
		EndedAt:    m.now,
		Stage:      m.s.phase,
		Reason:     reason,
		Message:    message,
	})
}

// members renders a member count with the right plural.
func members(n int) string {
	if n == 1 {
		return "1 member"
	}
	return fmt.Sprintf("%d members", n)
}
