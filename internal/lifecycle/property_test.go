package lifecycle

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

// allPhases is the test's own list of the phase constants, independent of the package.
var allPhases = []Phase{Gathering, Queued, Binding, Starting, Running, Recovering, Backoff,
	Impossible, Failed, Finished, Cancelled}

// timedPhases are the phases with a timer, and so a WakeAt.
var timedPhases = []Phase{Binding, Starting, Recovering, Backoff}

// TestStepProperties drives random event sequences, under random (also invalid)
// policies and with a clock that mostly moves forward, sometimes jumps to WakeAt and
// sometimes goes backwards, and checks the invariants after every step. rapid prints
// the seed and the failing sequence, and `-rapid.seed=N` reproduces it.
func TestStepProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		minMember, p, s := drawStart(t)
		now := epoch
		steps := rapid.IntRange(1, 150).Draw(t, "steps")
		for range steps {
			if wake := s.WakeAt(); !wake.IsZero() && rapid.IntRange(0, 3).Draw(t, "jumpToWake") == 0 {
				now = wake
			} else {
				now = now.Add(time.Duration(rapid.Int64Range(int64(-time.Minute), int64(time.Hour)).Draw(t, "advance")))
			}
			ev := drawEvent(t, minMember)
			before := snapshotOf(s)
			next, actions := Step(s, p, ev, now)
			if diff := cmp.Diff(before, snapshotOf(s)); diff != "" {
				t.Fatalf("Step(%T) modified its input state (-before +after):\n%s", ev, diff)
			}
			checkStep(t, p, s, next, ev, actions)
			// Branch from the same state: the other successor must not disturb this one.
			after := snapshotOf(next)
			Step(s, p, drawEvent(t, minMember), now)
			if diff := cmp.Diff(after, snapshotOf(next)); diff != "" {
				t.Fatalf("stepping %s again changed an earlier successor (-before +after):\n%s", s.Phase(), diff)
			}
			s = next
		}
	})
}

// drawStart draws a minMember and a policy, and returns them with a new State at epoch.
func drawStart(t *rapid.T) (int, Policy, State) {
	minMember := rapid.IntRange(1, 6).Draw(t, "minMember")
	p := drawPolicy(t)
	s, err := New(minMember, epoch)
	if err != nil {
		t.Fatalf("New(%d): %v", minMember, err)
	}
	return minMember, p, s
}

func drawPolicy(t *rapid.T) Policy {
	d := func(label string) time.Duration {
		return time.Duration(rapid.Int64Range(int64(-time.Minute), int64(30*time.Minute)).Draw(t, label))
	}
	return Policy{
		StartTimeout:    d("startTimeout"),
		RecoveryTimeout: d("recoveryTimeout"),
		MaxRetries:      rapid.IntRange(-1, 4).Draw(t, "maxRetries"),
		BackoffBase:     d("backoffBase"),
		BackoffMax:      d("backoffMax"),
		JitterSeed:      rapid.Uint64().Draw(t, "jitterSeed"),
	}
}

// drawEvent draws an event; observations are the most likely, cancellation the least,
// so that sequences get far into the lifecycle before they end.
func drawEvent(t *rapid.T, minMember int) Event {
	count := rapid.IntRange(0, minMember+2)
	switch kind := rapid.IntRange(0, 99).Draw(t, "kind"); {
	case kind < 50:
		placed := count.Draw(t, "placed")
		// A task short of its minimum is the exception, as in a cluster.
		task := rapid.SampledFrom([]string{"", "", "", "task ps short"})
		return Observe{
			TaskMissing:  task.Draw(t, "taskMissing"),
			TaskNotReady: task.Draw(t, "taskNotReady"),
			TaskFailed:   task.Draw(t, "taskFailed"),
			Members:      count.Draw(t, "members"),
			Bound:        count.Draw(t, "bound"),
			Ready:        count.Draw(t, "ready"),
			Succeeded:    count.Draw(t, "succeeded"),
			Failed:       count.Draw(t, "failed"),
			Held:         drawHeld(t),
			Placed:       placed,
			PlacedFailed: rapid.IntRange(0, placed).Draw(t, "placedFailed"),
		}
	case kind < 65:
		return Admitted{Planned: count.Draw(t, "planned")}
	case kind < 72:
		return Rejected{Impossible: rapid.Bool().Draw(t, "impossible"), Reason: "no fit"}
	case kind < 77:
		return NodesChanged{}
	case kind < 79:
		return Cancel{}
	case kind < 82:
		return Preempt{Message: "preempted by a group of higher priority"}
	case kind < 83:
		return OwnerFailed{Message: "Job default/j failed: BackoffLimitExceeded"}
	default:
		return Tick{}
	}
}

func drawHeld(t *rapid.T) corev1.ResourceList {
	held := corev1.ResourceList{}
	if n := rapid.IntRange(-1, 8).Draw(t, "gpus"); n != 0 {
		held["nvidia.com/gpu"] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	if m := rapid.IntRange(0, 64000).Draw(t, "milliCPU"); m != 0 {
		held[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(m), resource.DecimalSI)
	}
	if b := rapid.Int64Range(0, 1<<40).Draw(t, "memory"); b != 0 {
		held[corev1.ResourceMemory] = *resource.NewQuantity(b, resource.BinarySI)
	}
	return held
}

// checkStep checks the invariants that must hold for every step from s to next.
func checkStep(t *rapid.T, p Policy, s, next State, ev Event, actions []Action) {
	if !slices.Contains(allPhases, next.Phase()) {
		t.Fatalf("Step(%T) from %s gave phase %q, not one of the constants", ev, s.Phase(), next.Phase())
	}
	if s.Phase().Terminal() && next.Phase() != s.Phase() {
		t.Fatalf("Step(%T) left terminal phase %s for %s", ev, s.Phase(), next.Phase())
	}
	checkTransitions(t, s, next, actions)
	prev, cur := s.HeldBeforeReady(), next.HeldBeforeReady()
	for name, v := range prev {
		if cur[name] < v {
			t.Fatalf("Step(%T): held-before-ready %s decreased from %g to %g", ev, name, v, cur[name])
		}
	}
	maxAttempts := max(p.MaxRetries, 0) + 1
	if next.Failures() > maxAttempts || next.Attempt() > maxAttempts+next.Preemptions() {
		t.Fatalf("after Step(%T): %d failures and %d attempts (%d preempted), want at most %d failures and %d more attempts than preemptions (MaxRetries=%d)",
			ev, next.Failures(), next.Attempt(), next.Preemptions(), maxAttempts, maxAttempts, p.MaxRetries)
	}
	preempted := 0
	for _, a := range next.Attempts() {
		if a.Reason == ReasonPreempted {
			preempted++
		}
	}
	if preempted != next.Preemptions() {
		t.Fatalf("history records %d preempted attempts, Preemptions() = %d", preempted, next.Preemptions())
	}
	if next.Phase() == Failed && next.Reason() != ReasonOwnerFailed && next.Failures() != maxAttempts {
		t.Fatalf("Failed with %d failures, want exactly %d (or the owner failed)", next.Failures(), maxAttempts)
	}
	failed := 0
	for _, a := range next.Attempts() {
		if a.Failed() {
			failed++
		}
	}
	if failed != next.Failures() {
		t.Fatalf("history records %d failed attempts, Failures() = %d", failed, next.Failures())
	}
	if timed := slices.Contains(timedPhases, next.Phase()); timed == next.WakeAt().IsZero() {
		t.Fatalf("phase %s with WakeAt %v: want a wake-up exactly in %v", next.Phase(), next.WakeAt(), timedPhases)
	}
}

// checkTransitions checks that the Transition actions chain from s's phase to next's,
// and that queue and eviction actions match where the group ended up.
func checkTransitions(t *rapid.T, s, next State, actions []Action) {
	phase := s.Phase()
	for _, a := range actions {
		switch a := a.(type) {
		case Transition:
			if a.From != phase || a.To == a.From {
				t.Fatalf("transition %v does not follow phase %s", a, phase)
			}
			phase = a.To
		case Enqueue:
			if next.Phase() != Queued {
				t.Fatalf("Enqueue while ending in %s", next.Phase())
			}
		case EvictAll:
			ends := []Phase{Backoff, Failed, Cancelled}
			if a.Reason == ReasonPreempted {
				ends = []Phase{Queued, Gathering} // queued again in its place at once
			}
			if !slices.Contains(ends, next.Phase()) {
				t.Fatalf("EvictAll while ending in %s", next.Phase())
			}
		}
	}
	if phase != next.Phase() {
		t.Fatalf("transitions end in %s, state is in %s", phase, next.Phase())
	}
}

// snapshot is everything a State exposes, for checking that Step leaves its input alone.
type snapshot struct {
	Phase, Since, Reason, Message, Wake any
	Attempt, Failures, Planned          int
	Attempts                            []Attempt
	Observed                            string
	TimeToReady                         time.Duration
	HeldBeforeReady                     map[corev1.ResourceName]float64
	LastCleanup                         time.Duration
	CleanupSince                        time.Time
}

func snapshotOf(s State) snapshot {
	ttr, _ := s.TimeToReady()
	cleanup, _ := s.LastCleanup()
	since, _ := s.CleanupPendingSince()
	return snapshot{
		Phase: s.Phase(), Since: s.Since(), Reason: s.Reason(), Message: s.Message(), Wake: s.WakeAt(),
		Attempt: s.Attempt(), Failures: s.Failures(), Planned: s.Planned(),
		Attempts: s.Attempts(), Observed: s.Observed().String(),
		TimeToReady: ttr, HeldBeforeReady: s.HeldBeforeReady(),
		LastCleanup: cleanup, CleanupSince: since,
	}
}
