package lifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStopEvictsAndKeepsTheGroupOutOfTheQueue: stopping a running group ends its
// attempt and evicts every member, without spending a retry; while Stopped, members
// coming and going change nothing; Unstop queues it again.
func TestStopEvictsAndKeepsTheGroupOutOfTheQueue(t *testing.T) {
	p := Policy{StartTimeout: time.Minute, RecoveryTimeout: time.Minute, MaxRetries: 1, BackoffBase: time.Second, BackoffMax: time.Second}
	s, err := New(2, epoch)
	if err != nil {
		t.Fatal(err)
	}
	s, _ = steps(t, s, p, timed{0, Observe{Members: 2}}, timed{0, Admitted{Planned: 2}},
		timed{time.Second, Observe{Members: 2, Bound: 2, Ready: 2}})
	if s.Phase() != Running {
		t.Fatalf("phase %s, want Running before the stop", s.Phase())
	}

	s, actions := Step(s, p, Stop{Message: "stopped by the muster.dev/stopped annotation"}, epoch.Add(time.Minute))

	want := []Action{
		EvictAll{Reason: ReasonStopped, Message: "stopped by the muster.dev/stopped annotation"},
		Dequeue{},
		Transition{From: Running, To: Stopped, Reason: ReasonStopped, Message: "stopped by the muster.dev/stopped annotation"},
	}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("actions of Stop (-want +got):\n%s", diff)
	}
	if s.Failures() != 0 || len(s.Attempts()) != 1 || s.Attempts()[0].Reason != ReasonStopped {
		t.Errorf("after Stop: %d failures, attempts %+v; want no failure and one attempt ended Stopped", s.Failures(), s.Attempts())
	}
	s, actions = steps(t, s, p, timed{2 * time.Minute, Observe{Members: 2}}, timed{time.Hour, Tick{}})
	if s.Phase() != Stopped || len(actions) != 0 {
		t.Errorf("a stopped group with its members back: phase %s, actions %v; want Stopped and nothing", s.Phase(), actions)
	}

	s, actions = Step(s, p, Unstop{}, epoch.Add(2*time.Hour))

	if s.Phase() != Queued || len(actions) == 0 {
		t.Errorf("after Unstop: phase %s, actions %v; want Queued", s.Phase(), actions)
	}
	if _, again := Step(s, p, Unstop{}, epoch.Add(2*time.Hour)); len(again) != 0 {
		t.Errorf("resuming a group that is not stopped: actions %v, want none", again)
	}
}
