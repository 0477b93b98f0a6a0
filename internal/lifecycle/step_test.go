package lifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// steps applies events in order, each at its offset from the epoch, and returns the
// final state with the actions of the last step.
func steps(t *testing.T, s State, p Policy, evs ...timed) (State, []Action) {
	t.Helper()
	var actions []Action
	for _, e := range evs {
		s, actions = Step(s, p, e.ev, epoch.Add(e.at))
	}
	return s, actions
}

type timed struct {
	at time.Duration
	ev Event
}

// TestStepKeepsBranchesIndependent steps one state two different ways, both of which end
// the current attempt, and checks that neither successor sees the other's history: a
// State is a value even when its history slice has spare capacity.
func TestStepKeepsBranchesIndependent(t *testing.T) {
	p := Policy{StartTimeout: time.Minute, RecoveryTimeout: time.Minute, MaxRetries: 5,
		BackoffBase: time.Second, BackoffMax: time.Second}
	s, err := New(1, epoch)
	if err != nil {
		t.Fatal(err)
	}
	s, _ = steps(t, s, p, timed{0, Observe{Members: 1}})
	at := time.Duration(0)
	for range 3 { // three failed attempts: the history slice now has spare capacity
		s, _ = steps(t, s, p, timed{at, Admitted{Planned: 1}}, timed{at + time.Minute, Tick{}}, timed{at + time.Hour, Tick{}})
		at += time.Hour
	}
	s, _ = steps(t, s, p, timed{at, Admitted{Planned: 1}})

	timedOut, _ := Step(s, p, Tick{}, epoch.Add(at+time.Minute))
	cancelled, _ := Step(s, p, Cancel{}, epoch.Add(at+time.Second))

	reasons := func(s State) []string {
		var out []string
		for _, a := range s.Attempts() {
			out = append(out, a.Reason)
		}
		return out
	}
	want := []string{ReasonStartTimeout, ReasonStartTimeout, ReasonStartTimeout, ReasonStartTimeout}
	if diff := cmp.Diff(want, reasons(timedOut)); diff != "" {
		t.Errorf("timed-out branch attempts (-want +got):\n%s", diff)
	}
	want[3] = ReasonCancelled
	if diff := cmp.Diff(want, reasons(cancelled)); diff != "" {
		t.Errorf("cancelled branch attempts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:3], reasons(s)); diff != "" {
		t.Errorf("original state attempts (-want +got):\n%s", diff)
	}
}

// TestStepCopiesObservedHeld checks that a caller reusing its ResourceList after Observe
// does not change the state.
func TestStepCopiesObservedHeld(t *testing.T) {
	s, err := New(1, epoch)
	if err != nil {
		t.Fatal(err)
	}
	held := parseHeldOrDie(t, "gpu:2")
	s, _ = Step(s, DefaultPolicy(), Observe{Members: 1, Bound: 1, Held: held}, epoch)
	held["nvidia.com/gpu"] = parseHeldOrDie(t, "gpu:7")["nvidia.com/gpu"]
	s, _ = Step(s, DefaultPolicy(), Tick{}, epoch.Add(10*time.Second))
	if got, want := s.HeldBeforeReady()["nvidia.com/gpu"], 20.0; got != want {
		t.Errorf("HeldBeforeReady[nvidia.com/gpu] = %g after the caller changed its list, want %g", got, want)
	}
	if got := s.Observed().String(); got != "members=1 bound=1 ready=0 succeeded=0 failed=0 held=nvidia.com/gpu:2" {
		t.Errorf("Observed() = %s, want the observation as it was delivered", got)
	}
}

func parseHeldOrDie(t *testing.T, vals ...string) corev1.ResourceList {
	t.Helper()
	l, err := parseHeld(vals)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// BenchmarkStep measures one group's whole lifecycle with a failed first attempt: 14
// steps, with held resources integrated on each.
func BenchmarkStep(b *testing.B) {
	p := DefaultPolicy()
	held := corev1.ResourceList{}
	for _, v := range []string{"gpu:8", "cpu:32", "memory:256Gi"} {
		l, err := parseHeld([]string{v})
		if err != nil {
			b.Fatal(err)
		}
		for k, q := range l {
			held[k] = q
		}
	}
	seq := []timed{
		{0, Observe{Members: 8}},
		{time.Second, Admitted{Planned: 8}},
		{2 * time.Second, Observe{Members: 8, Bound: 8, Held: held}},
		{time.Minute, Observe{Members: 8, Bound: 8, Ready: 4, Held: held}},
		{11 * time.Minute, Tick{}},
		{11*time.Minute + 10*time.Second, Observe{Members: 8}},
		{12 * time.Minute, Tick{}},
		{13 * time.Minute, Admitted{Planned: 8}},
		{13*time.Minute + time.Second, Observe{Members: 8, Bound: 8, Held: held}},
		{14 * time.Minute, Observe{Members: 8, Bound: 8, Ready: 8, Held: held}},
		{time.Hour, Observe{Members: 7, Bound: 7, Ready: 7, Held: held}},
		{time.Hour + time.Minute, Observe{Members: 8, Bound: 8, Ready: 8, Held: held}},
		{2 * time.Hour, Observe{Members: 8, Bound: 8, Ready: 8, Succeeded: 8}},
		{2 * time.Hour, Tick{}},
	}
	start, err := New(8, epoch)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s := start
		for _, e := range seq {
			s, _ = Step(s, p, e.ev, epoch.Add(e.at))
		}
		if s.Phase() != Finished {
			b.Fatalf("sequence ended in %s, want %s", s.Phase(), Finished)
		}
	}
}

// TestStepKeepsHeldWhileUnchanged checks that an observation holding what the last one
// did keeps the state's copy (a caller changing its new list changes nothing), and that
// one holding something else is counted from then on.
func TestStepKeepsHeldWhileUnchanged(t *testing.T) {
	s, err := New(2, epoch)
	if err != nil {
		t.Fatal(err)
	}
	s, _ = Step(s, DefaultPolicy(), Observe{Members: 2, Bound: 1, Held: parseHeldOrDie(t, "gpu:2")}, epoch)
	again := parseHeldOrDie(t, "gpu:2")
	s, _ = Step(s, DefaultPolicy(), Observe{Members: 2, Bound: 1, Held: again}, epoch.Add(10*time.Second))
	again["nvidia.com/gpu"] = parseHeldOrDie(t, "gpu:9")["nvidia.com/gpu"]
	s, _ = Step(s, DefaultPolicy(), Observe{Members: 2, Bound: 2, Held: parseHeldOrDie(t, "gpu:4")}, epoch.Add(20*time.Second))
	s, _ = Step(s, DefaultPolicy(), Tick{}, epoch.Add(30*time.Second))
	// 2 GPUs for 20 s, then 4 for 10 s.
	if got, want := s.HeldBeforeReady()["nvidia.com/gpu"], 80.0; got != want {
		t.Errorf("HeldBeforeReady[nvidia.com/gpu] = %g, want %g", got, want)
	}
	if got := s.Observed().String(); got != "members=2 bound=2 ready=0 succeeded=0 failed=0 held=nvidia.com/gpu:4" {
		t.Errorf("Observed() = %s", got)
	}
}
