package lifecycle

import (
	"fmt"
	"slices"
	"time"
)

// Past is what a group's lifecycle record (written on its object by an earlier scheduler
// process) says of it: enough to resume its retries after a restart or a change of
// leader, so that a broken group still fails after max-retries.
type Past struct {
	// Phase, Reason and Message are the recorded phase and why.
	Phase   Phase
	Reason  string
	Message string
	// Attempt is the number of the recorded current or last attempt.
	Attempt int
	// Failures counts the attempts that failed by timeout.
	Failures int
	// WakeAt is when a recorded Backoff ends.
	WakeAt time.Time
	// Attempts are the attempts that ended, oldest first.
	Attempts []Attempt
}

// Resume returns the State of a group seen at now whose record says past. Its ended
// attempts, failures and preemptions carry over, so retries go on counting:
//   - a group that ended (Failed, Finished, Cancelled) stays so: its pods are not run
//     again;
//   - a group in Backoff backs off until past.WakeAt (at once if that has passed);
//   - any other group starts in Gathering, as a new one does. An attempt that was in
//     progress (Binding to Recovering) is not counted: when the group's members are
//     found bound, adopting them resumes it under its own number.
func Resume(minMember int, now time.Time, past Past) (State, error) {
	s, err := New(minMember, now)
	if err != nil {
		return State{}, err
	}
	if past.Attempt < len(past.Attempts) || past.Failures < 0 || past.Failures > len(past.Attempts) {
		return State{}, fmt.Errorf("lifecycle: a record of attempt %d with %d ended attempts and %d failures is inconsistent",
			past.Attempt, len(past.Attempts), past.Failures)
	}
	s.history = slices.Clip(slices.Clone(past.Attempts))
	s.attempt, s.failures = past.Attempt, past.Failures
	for _, a := range past.Attempts {
		if a.Reason == ReasonPreempted {
			s.preempted++
		}
	}
	if n := len(past.Attempts); n > 0 {
		s.admittedAt = past.Attempts[n-1].AdmittedAt
	}
	switch past.Phase {
	case Failed, Finished, Cancelled:
		s.phase, s.reason, s.message = past.Phase, past.Reason, past.Message
	case Backoff:
		s.phase, s.reason, s.message = Backoff, past.Reason, past.Message
		s.deadline = past.WakeAt
		if s.deadline.IsZero() || s.deadline.Before(now) {
			s.deadline = now
		}
	case Binding, Starting, Running, Recovering:
		s.attempt = max(past.Attempt-1, len(past.Attempts))
	}
	return s, nil
}
