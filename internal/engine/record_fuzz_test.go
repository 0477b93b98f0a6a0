package engine_test

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// FuzzRecordIn decodes any text as the muster.dev/lifecycle annotation (a tenant can write
// it on its group object) and resumes a group from it, as a restarted muster does. It
// checks that decoding never panics, that a decoded record encodes to text that decodes to
// the same record, and that a record lifecycle.Resume accepts gives a consistent state:
// the recorded ended attempts, an attempt number no smaller than their count, no more
// failures than attempts, a known phase, and a terminal phase kept from a terminal record.
func FuzzRecordIn(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string, minMember int) {
		rec, ok, err := musterv1alpha1.RecordIn(map[string]string{musterv1alpha1.LifecycleAnnotation: raw})
		if err != nil || !ok {
			if ok {
				t.Fatalf("RecordIn reports a record and an error: %v", err)
			}
			return
		}
		again := mustRoundTrip(t, rec)
		if d := cmp.Diff(again, mustRoundTrip(t, again)); d != "" {
			t.Fatalf("an encoded record does not decode to itself (-first +again):\n%s", d)
		}
		now := time.Unix(1_800_000_000, 0)
		past := engine.PastOf(rec)
		s, err := lifecycle.Resume(minMember, now, past)
		if err != nil {
			return
		}
		if s.Attempt() < len(s.Attempts()) || s.Failures() < 0 || s.Failures() > len(s.Attempts()) {
			t.Fatalf("resumed at attempt %d with %d ended attempts and %d failures", s.Attempt(), len(s.Attempts()), s.Failures())
		}
		if len(s.Attempts()) != len(past.Attempts) {
			t.Fatalf("resumed with %d ended attempts, the record has %d", len(s.Attempts()), len(past.Attempts))
		}
		if past.Phase.Terminal() && s.Phase() != past.Phase {
			t.Fatalf("a %s record resumed as %s", past.Phase, s.Phase())
		}
		if !knownPhase(s.Phase()) {
			t.Fatalf("resumed in phase %q", s.Phase())
		}
		if w := s.WakeAt(); s.Phase() == lifecycle.Backoff && w.Before(now) {
			t.Fatalf("resumed in Backoff until %s, before now (%s)", w, now)
		}
	})
}

// mustRoundTrip encodes a record as the scheduler writes it and decodes it again.
func mustRoundTrip(t *testing.T, rec musterv1alpha1.GroupLifecycle) musterv1alpha1.GroupLifecycle {
	t.Helper()
	raw, err := json.Marshal(rec)
	if err != nil {
		t.Fatalf("encoding a decoded record: %v", err)
	}
	back, ok, err := musterv1alpha1.RecordIn(map[string]string{musterv1alpha1.LifecycleAnnotation: string(raw)})
	if err != nil || !ok {
		t.Fatalf("decoding %q: ok %v, %v", raw, ok, err)
	}
	return back
}

func knownPhase(p lifecycle.Phase) bool {
	switch p {
	case lifecycle.Gathering, lifecycle.Queued, lifecycle.Binding, lifecycle.Starting, lifecycle.Running,
		lifecycle.Recovering, lifecycle.Backoff, lifecycle.Impossible, lifecycle.Failed, lifecycle.Finished, lifecycle.Cancelled:
		return true
	}
	return false
}

// FuzzRecordRoundTrip builds a group's status from the fuzzer's values, encodes its record
// (EncodeRecord) and decodes it (RecordIn): the record read back is the one written, and
// the past read from it (PastOf) is the status's own, to the second, as the API stores
// times.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, phase, reason, message string, minMember, attempt, failures int,
		admitted, wake uint32, timeout int64, ended uint8) {
		if !utf8.ValidString(phase) || !utf8.ValidString(reason) || !utf8.ValidString(message) {
			return // the API server accepts only UTF-8 text
		}
		at := func(s uint32) time.Time { return time.Unix(int64(s), 0) }
		st := engine.Status{
			Phase: lifecycle.Phase(phase), Reason: reason, Message: message, Queue: "research",
			Spec:    engine.GroupSpec{MinMember: minMember},
			Attempt: attempt, Failures: failures, AdmittedAt: at(admitted), WakeAt: at(wake),
			Policy: lifecycle.Policy{StartTimeout: time.Duration(timeout), RecoveryTimeout: time.Minute,
				MaxRetries: 3, BackoffBase: time.Second, BackoffMax: time.Duration(timeout)},
		}
		for i := range int(ended % 8) {
			st.Attempts = append(st.Attempts, lifecycle.Attempt{Number: i + 1, AdmittedAt: at(admitted + uint32(i)),
				EndedAt: at(wake + uint32(i)), Stage: lifecycle.Starting, Reason: reason, Message: message})
		}
		raw, err := engine.EncodeRecord(st)
		if err != nil {
			t.Fatalf("encoding the record of %+v: %v", st, err)
		}
		rec, ok, err := musterv1alpha1.RecordIn(map[string]string{musterv1alpha1.LifecycleAnnotation: raw})
		if err != nil || !ok {
			t.Fatalf("decoding %q: ok %v, %v", raw, ok, err)
		}
		sameTime := cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })
		if d := cmp.Diff(engine.RecordOf(st), rec, sameTime); d != "" {
			t.Fatalf("the record read back differs (-written +read):\n%s", d)
		}
		want := lifecycle.Past{Phase: st.Phase, Reason: reason, Message: message, Attempt: attempt, Failures: failures,
			WakeAt: st.WakeAt, Attempts: st.Attempts}
		if d := cmp.Diff(want, engine.PastOf(rec), cmp.Comparer(time.Time.Equal)); d != "" {
			t.Fatalf("the past read back differs (-status +read):\n%s", d)
		}
	})
}

// FuzzWaitRecord builds a wait reason from the fuzzer's values (each kind, a quota with
// or without a cohort, a placement diagnosis of one shape), writes it in a record
// (EncodeRecord) and reads it back (RecordIn, ReasonOf): the reason read back renders
// as the engine's own (queue.Reason.String), so that the typed reason and the Waiting
// text can never disagree.
func FuzzWaitRecord(f *testing.F) {
	f.Add(uint8(4), true, uint32(4), uint32(2), uint32(4), "research", uint8(0), "worker-0 ×2", "nvidia.com/gpu", uint8(2))
	f.Add(uint8(5), false, uint32(1), uint32(1), uint32(8), "", uint8(3), "w", "", uint8(0))
	f.Add(uint8(6), true, uint32(1500), uint32(0), uint32(0), "g", uint8(1), "x ×1", "gpu=a100:NoSchedule", uint8(9))
	f.Fuzz(func(t *testing.T, kind uint8, cpu bool, need, used, quota uint32, name string, flags uint8, shape, detail string, nodes uint8) {
		if !utf8.ValidString(name) || !utf8.ValidString(shape) || !utf8.ValidString(detail) {
			return // the API server accepts only UTF-8 text
		}
		kinds := []queue.ReasonKind{queue.QueueNotFound, queue.QueueNotAllowed, queue.QueueAmbiguous, queue.QuotaExceeded,
			queue.QuotaNeverEnough, queue.Placement, queue.Reserved}
		res := corev1.ResourceName("nvidia.com/gpu")
		if cpu {
			res = corev1.ResourceCPU
		}
		r := queue.Reason{Kind: kinds[int(kind)%len(kinds)], Queue: name, Namespace: name, Candidates: []string{name, "q"},
			Resource: res, Need: int64(need), Used: int64(used), Quota: int64(quota),
			Reclaimable: flags&1 != 0, BorrowingPaused: flags&2 != 0, ReservedFor: name, ForPreemption: flags&4 != 0}
		if r.Kind != queue.QuotaExceeded && r.Kind != queue.QuotaNeverEnough {
			r.Resource, r.Need, r.Used, r.Quota = "", 0, 0, 0 // the record keeps quota figures for the quota kinds only
		}
		if flags&8 != 0 && r.Resource != "" {
			r.Cohort, r.CohortUsed, r.CohortQuota, r.Limit = name+"-cohort", int64(used)*2, int64(quota)*2, int64(quota)+int64(need)
		}
		if r.Kind == queue.Placement {
			code := placement.Unschedulable
			if flags&16 != 0 {
				code = placement.Impossible
			}
			sd := placement.ShapeDiagnosis{Shape: shape, Members: int(nodes), Requests: cluster.Resources{res: int64(need)},
				Nodes: int(nodes), Reasons: []placement.ReasonCount{{NodeReason: placement.NodeReason{Kind: placement.InsufficientResource, Detail: detail}, Nodes: int(nodes)}}}
			if flags&32 != 0 {
				sd.Shortfall = &placement.Shortfall{Resource: res, Need: int64(need), Largest: int64(quota), Eligible: int(nodes)}
			}
			r.Diagnosis = &placement.Diagnosis{Code: code, MinMember: int(nodes), Members: int(nodes), Shapes: []placement.ShapeDiagnosis{sd}}
		}
		st := engine.Status{Phase: lifecycle.Queued, Wait: &r, Waiting: r.String()}
		raw, err := engine.EncodeRecord(st)
		if err != nil {
			t.Fatalf("encoding the record of %+v: %v", r, err)
		}
		rec, ok, err := musterv1alpha1.RecordIn(map[string]string{musterv1alpha1.LifecycleAnnotation: raw})
		if err != nil || !ok || rec.Wait == nil {
			t.Fatalf("decoding %q: ok %v, %v, wait %v", raw, ok, err, rec.Wait)
		}
		if got := engine.ReasonOf(*rec.Wait).String(); got != st.Waiting {
			t.Fatalf("the reason read back renders as\n%q\nthe engine's as\n%q\nrecord: %s", got, st.Waiting, raw)
		}
	})
}
