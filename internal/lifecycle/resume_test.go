package lifecycle

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// pastOf runs a group through evs from New and returns what its record would say.
func pastOf(t *testing.T, p Policy, evs ...timed) (State, Past) {
	t.Helper()
	s, err := New(2, epoch)
	if err != nil {
		t.Fatal(err)
	}
	s, _ = steps(t, s, p, evs...)
	return s, recordOf(s)
}

// recordOf is what the scheduler records of s, as Past.
func recordOf(s State) Past {
	return Past{Phase: s.Phase(), Reason: s.Reason(), Message: s.Message(), Attempt: s.Attempt(),
		Failures: s.Failures(), WakeAt: s.WakeAt(), Attempts: s.Attempts()}
}

var resumePolicy = Policy{StartTimeout: time.Minute, RecoveryTimeout: time.Minute, MaxRetries: 1,
	BackoffBase: time.Hour, BackoffMax: time.Hour}

// TestResumeBackoff: a group that failed once and was backing off when the scheduler
// restarted backs off until the recorded end, is queued behind groups that never
// failed, and fails for good at its next timeout (max-retries 1): the failure before
// the restart counts.
func TestResumeBackoff(t *testing.T) {
	before, past := pastOf(t, resumePolicy,
		timed{0, Observe{Members: 2}}, timed{0, Admitted{Planned: 2}}, timed{time.Minute, Tick{}})
	if past.Phase != Backoff || past.Failures != 1 {
		t.Fatalf("setup: expected Backoff after 1 failure, found %s with %d", past.Phase, past.Failures)
	}
	restart := 10 * time.Minute
	s, err := Resume(2, epoch.Add(restart), past)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase() != Backoff || !s.WakeAt().Equal(before.WakeAt()) || s.Failures() != 1 || len(s.Attempts()) != 1 {
		t.Fatalf("resumed: expected Backoff until %v with 1 failure and 1 attempt, found %s", before.WakeAt(), s)
	}
	s, _ = steps(t, s, resumePolicy, timed{restart, Observe{Members: 2}})
	if s.Phase() != Backoff {
		t.Fatalf("before the recorded end of the backoff: expected Backoff, found %s", s)
	}
	wake := before.WakeAt().Sub(epoch)
	s, actions := steps(t, s, resumePolicy, timed{wake, Tick{}})
	if s.Phase() != Queued || !slices.Contains(actions, Action(Enqueue{Requeued: true})) {
		t.Fatalf("at the end of the backoff: expected Queued behind groups that never failed, found %s, %+v", s, actions)
	}
	s, _ = steps(t, s, resumePolicy, timed{wake, Admitted{Planned: 2}}, timed{wake + time.Minute, Tick{}})
	if s.Phase() != Failed || s.Attempt() != 2 || s.Failures() != 2 {
		t.Fatalf("after the second timeout: expected Failed at attempt 2 with 2 failures, found %s, attempt %d, %d failures",
			s, s.Attempt(), s.Failures())
	}
}

// TestResumeRunning: a group whose attempt 2 was running keeps that number when its
// bound members are adopted, and its earlier preemption still gives it an extra attempt.
func TestResumeRunning(t *testing.T) {
	_, past := pastOf(t, resumePolicy,
		timed{0, Observe{Members: 2}}, timed{0, Admitted{Planned: 2}},
		timed{time.Second, Preempt{Message: "preempted by x"}},
		timed{2 * time.Hour, Tick{}}, timed{2 * time.Hour, Admitted{Planned: 2}},
		timed{2*time.Hour + time.Second, Observe{Members: 2, Bound: 2, Ready: 2}})
	if past.Phase != Running || past.Attempt != 2 {
		t.Fatalf("setup: expected Running attempt 2, found %s attempt %d", past.Phase, past.Attempt)
	}
	s, err := Resume(2, epoch.Add(3*time.Hour), past)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase() != Gathering || s.Preemptions() != 1 {
		t.Fatalf("resumed: expected Gathering with 1 preemption, found %s, %d preemptions", s, s.Preemptions())
	}
	at := 3 * time.Hour
	s, _ = steps(t, s, resumePolicy, timed{at, Observe{Members: 2, Bound: 2, Ready: 2}}, timed{at, Admitted{Planned: 2}},
		timed{at, Observe{Members: 2, Bound: 2, Ready: 2}})
	if s.Phase() != Running || s.Attempt() != 2 {
		t.Fatalf("adopted: expected Running attempt 2, found %s attempt %d", s, s.Attempt())
	}
}

// TestResumeFailed: a Failed group stays Failed, whatever its members do.
func TestResumeFailed(t *testing.T) {
	_, past := pastOf(t, Policy{StartTimeout: time.Minute, RecoveryTimeout: time.Minute, MaxRetries: 0},
		timed{0, Observe{Members: 2}}, timed{0, Admitted{Planned: 2}}, timed{time.Minute, Tick{}})
	if past.Phase != Failed {
		t.Fatalf("setup: expected Failed, found %s", past.Phase)
	}
	s, err := Resume(2, epoch.Add(time.Hour), past)
	if err != nil {
		t.Fatal(err)
	}
	s, _ = steps(t, s, resumePolicy, timed{time.Hour, Observe{Members: 2}}, timed{time.Hour, Tick{}})
	if s.Phase() != Failed || s.Reason() != ReasonRetryLimitExceeded || len(s.Attempts()) != 1 {
		t.Fatalf("expected Failed (RetryLimitExceeded) with its attempt, found %s with %d attempts", s, len(s.Attempts()))
	}
}

// TestResumeRejectsInconsistentRecords: a record whose counts contradict its attempts is
// an error, not a State.
func TestResumeRejectsInconsistentRecords(t *testing.T) {
	for _, past := range []Past{
		{Phase: Backoff, Attempt: 0, Failures: 1},
		{Phase: Backoff, Attempt: 1, Failures: 2, Attempts: []Attempt{{Number: 1, Reason: ReasonStartTimeout}}},
		{Phase: Queued, Attempt: 0, Attempts: []Attempt{{Number: 1}}},
	} {
		if _, err := Resume(2, epoch, past); err == nil {
			t.Errorf("Resume(%+v): expected an error, found none", past)
		}
	}
}

// TestResumeProperties drives random event sequences, as TestStepProperties does, and
// now and then restarts the scheduler: the state is rebuilt from what its record holds
// (Resume). The rebuilt state keeps the history, failures and preemptions, a Failed
// group stays Failed and a Backoff keeps its end, and every step after it keeps the
// invariants of checkStep: in particular no group gets more attempts than its policy
// allows because the scheduler restarted.
func TestResumeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		minMember, p, s := drawStart(t)
		now := epoch
		for range rapid.IntRange(1, 150).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "advance")))
			if rapid.IntRange(0, 9).Draw(t, "restart") == 0 {
				resumed, err := Resume(minMember, now, recordOf(s))
				if err != nil {
					t.Fatalf("Resume of a reachable %s: %v", s, err)
				}
				if resumed.Failures() != s.Failures() || resumed.Preemptions() != s.Preemptions() ||
					len(resumed.Attempts()) != len(s.Attempts()) {
					t.Fatalf("Resume lost history: %d failures, %d preemptions, %d attempts; want %d, %d, %d",
						resumed.Failures(), resumed.Preemptions(), len(resumed.Attempts()), s.Failures(), s.Preemptions(), len(s.Attempts()))
				}
				if (s.Phase() == Failed || s.Phase() == Backoff) && resumed.Phase() != s.Phase() {
					t.Fatalf("Resume of %s gave %s", s.Phase(), resumed.Phase())
				}
				if s.Phase() == Backoff && s.WakeAt().After(now) && !resumed.WakeAt().Equal(s.WakeAt()) {
					t.Fatalf("Resume of a Backoff until %v wakes at %v", s.WakeAt(), resumed.WakeAt())
				}
				s = resumed
			}
			if wake := s.WakeAt(); !wake.IsZero() && rapid.IntRange(0, 3).Draw(t, "jumpToWake") == 0 && wake.After(now) {
				now = wake
			}
			ev := drawEvent(t, minMember)
			next, actions := Step(s, p, ev, now)
			checkStep(t, p, s, next, ev, actions)
			s = next
		}
	})
}
