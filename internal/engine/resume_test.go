package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sim"
)

// TestGroupResumesFromItsRecord: a group whose record says it backs off until a time
// is not admitted before then, though it fits, and is admitted as its next attempt
// after; a record that contradicts itself is reported and the group starts anew.
func TestGroupResumesFromItsRecord(t *testing.T) {
	wake := sim.Epoch.Add(time.Minute)
	failed := lifecycle.Attempt{Number: 1, AdmittedAt: sim.Epoch.Add(-10 * time.Minute), EndedAt: sim.Epoch.Add(-5 * time.Minute),
		Stage: lifecycle.Starting, Reason: lifecycle.ReasonStartTimeout, Message: "start-timeout 5m0s expired"}
	for _, tc := range []struct {
		name        string
		past        lifecycle.Past
		wantAttempt int
		wantEvent   string
	}{
		{"backoff", lifecycle.Past{Phase: lifecycle.Backoff, Reason: lifecycle.ReasonStartTimeout, Attempt: 1, Failures: 1,
			WakeAt: wake, Attempts: []lifecycle.Attempt{failed}}, 2, ""},
		{"inconsistent", lifecycle.Past{Phase: lifecycle.Backoff, Attempt: 0, Failures: 1, WakeAt: wake}, 1, "RecordIgnored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine()
			e.SetNode(gt.Node("n-0").GPU(1).Obj())
			key := "Coscheduling/default/job"
			past := tc.past
			e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "job", MinMember: 1, Past: &past})
			e.SetPod(gt.Pod("job-0").GPU(1).Obj(), key)
			out := e.Step(sim.Epoch)
			var reasons []string
			for _, ev := range out.Events {
				reasons = append(reasons, ev.Reason)
			}
			if tc.wantEvent != "" {
				if len(out.Binds()) != 1 {
					t.Fatalf("a group starting anew: expected it bound at once, found binds %+v", out.Binds())
				}
				if !slices.Contains(reasons, tc.wantEvent) {
					t.Fatalf("expected a %s event, found %v", tc.wantEvent, reasons)
				}
			} else {
				if len(out.Binds()) != 0 {
					t.Fatalf("before the recorded end of its backoff: expected no bind, found %+v", out.Binds())
				}
				if out = e.Step(wake); len(out.Binds()) != 1 {
					t.Fatalf("at the end of its backoff: expected 1 bind, found %+v", out.Binds())
				}
			}
			st, _ := e.Group(key)
			if st.Attempt != tc.wantAttempt {
				t.Errorf("expected attempt %d, found %d (%s)", tc.wantAttempt, st.Attempt, st.Phase)
			}
		})
	}
}

// TestResumedBackoffAdoptsBoundMembers: a restarted muster finds a group whose record
// says it backs off after its first attempt, and its members bound already (the muster
// before it admitted the second attempt and stopped before it wrote the record). At
// the end of the backoff the group takes the bound members over as its second attempt,
// as a group found Queued with bound members does. (It was queued with no member left
// to place: Impossible, "minMember 1 is larger than the group's 0 members".)
func TestResumedBackoffAdoptsBoundMembers(t *testing.T) {
	for _, name := range []string{"wake passed", "wake to come"} {
		t.Run(name, func(t *testing.T) {
			wake := sim.Epoch.Add(-time.Second)
			if name == "wake to come" {
				wake = sim.Epoch.Add(time.Minute)
			}
			failed := lifecycle.Attempt{Number: 1, AdmittedAt: sim.Epoch.Add(-10 * time.Minute), EndedAt: sim.Epoch.Add(-5 * time.Minute),
				Stage: lifecycle.Starting, Reason: lifecycle.ReasonStartTimeout, Message: "start-timeout 5m0s expired"}
			past := lifecycle.Past{Phase: lifecycle.Backoff, Reason: lifecycle.ReasonStartTimeout, Attempt: 1, Failures: 1,
				WakeAt: wake, Attempts: []lifecycle.Attempt{failed}}
			e := oneGPUEngine(2)
			key := "Coscheduling/default/g"
			e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "g", MinMember: 2, Past: &past})
			for i, node := range []string{"n-0", "n-1"} {
				p := gt.Pod(fmt.Sprintf("g-%d", i)).GPU(1).Node(node).Obj()
				p.Status.Phase = corev1.PodRunning
				e.SetPod(p, key)
			}
			var events []string
			for _, now := range []time.Time{sim.Epoch, sim.Epoch.Add(time.Minute)} {
				out := e.Step(now)
				if len(out.Binds()) != 0 || len(out.Evictions) != 0 {
					t.Fatalf("at %s: expected the bound members kept, found binds %+v, evictions %+v", now.Sub(sim.Epoch), out.Binds(), out.Evictions)
				}
				for _, ev := range out.Events {
					events = append(events, ev.Reason+": "+ev.Message)
				}
			}
			if st, _ := e.Group(key); st.Phase != lifecycle.Starting || st.Attempt != 2 || len(st.Attempts) != 1 {
				t.Errorf("expected the group Starting its second attempt, the first in its history; found %s, attempt %d, attempts %+v; events %q",
					st.Phase, st.Attempt, st.Attempts, events)
			}
		})
	}
}
