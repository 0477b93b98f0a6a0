package engine_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// TestPastOfReadsBackTheRecord: what the scheduler writes (RecordOf, as JSON on the
// group's object) reads back (PastOf) as the lifecycle it resumes, to the second (the
// record's times are RFC 3339).
func TestPastOfReadsBackTheRecord(t *testing.T) {
	at := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	st := engine.Status{
		Phase: lifecycle.Backoff, Reason: lifecycle.ReasonStartTimeout, Message: "start-timeout 5m0s expired; retry 1 of 3 in 30s",
		Attempt: 2, Failures: 1, WakeAt: at.Add(30 * time.Second),
		Attempts: []lifecycle.Attempt{
			{Number: 1, AdmittedAt: at.Add(-time.Hour), EndedAt: at.Add(-50 * time.Minute), Stage: lifecycle.Running,
				Reason: lifecycle.ReasonPreempted, Message: "preempted by default/big (priority 100)"},
			{Number: 2, AdmittedAt: at.Add(-5 * time.Minute), EndedAt: at, Stage: lifecycle.Starting,
				Reason: lifecycle.ReasonStartTimeout, Message: "start-timeout 5m0s expired"},
		},
	}
	data, err := json.Marshal(engine.RecordOf(st))
	if err != nil {
		t.Fatal(err)
	}
	var rec musterv1alpha1.GroupLifecycle
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	want := lifecycle.Past{Phase: st.Phase, Reason: st.Reason, Message: st.Message, Attempt: 2, Failures: 1,
		WakeAt: st.WakeAt, Attempts: st.Attempts}
	if d := cmp.Diff(want, engine.PastOf(rec), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("PastOf(RecordOf(status)) (-want +got):\n%s", d)
	}
}

// TestLaterRecord: of two copies of a group's record, the one with more attempts begun,
// then more failed, then more ended is the later; neither of two equal ones is.
func TestLaterRecord(t *testing.T) {
	ended := []musterv1alpha1.AttemptRecord{{Number: 1}}
	starting := musterv1alpha1.GroupLifecycle{Phase: "Starting", Attempt: 1}
	backoff := musterv1alpha1.GroupLifecycle{Phase: "Backoff", Attempt: 1, Failures: 1, Attempts: ended}
	preempted := musterv1alpha1.GroupLifecycle{Phase: "Queued", Attempt: 1, Attempts: ended}
	second := musterv1alpha1.GroupLifecycle{Phase: "Starting", Attempt: 2, Failures: 1, Attempts: ended}
	for _, tc := range []struct {
		name        string
		later, than musterv1alpha1.GroupLifecycle
	}{
		{"failed after starting", backoff, starting},
		{"a second attempt after the backoff", second, backoff},
		{"a second attempt after a preemption", second, preempted},
		{"an ended attempt after it began", preempted, starting},
	} {
		if !engine.Later(tc.later, tc.than) || engine.Later(tc.than, tc.later) {
			t.Errorf("%s: expected %s (attempt %d) later than %s (attempt %d), and not the other way", tc.name,
				tc.later.Phase, tc.later.Attempt, tc.than.Phase, tc.than.Attempt)
		}
	}
	if engine.Later(backoff, backoff) {
		t.Errorf("a record later than itself")
	}
}
