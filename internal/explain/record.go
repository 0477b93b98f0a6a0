package explain

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// RecordOf turns the engine's status of a group into the lifecycle record the scheduler
// writes on the group object for explain to read.
func RecordOf(st engine.Status) musterv1alpha1.GroupLifecycle {
	r := musterv1alpha1.GroupLifecycle{
		Phase: string(st.Phase), Reason: st.Reason, Message: st.Message, Queue: st.Queue,
		Waiting: st.Waiting, WaitingKind: st.WaitingKind,
		MinMember: st.Spec.MinMember,
		Attempt:   st.Attempt, Failures: st.Failures, MaxRetries: st.Policy.MaxRetries,
		StartTimeout:    metav1.Duration{Duration: st.Policy.StartTimeout},
		RecoveryTimeout: metav1.Duration{Duration: st.Policy.RecoveryTimeout},
		BackoffBase:     metav1.Duration{Duration: st.Policy.BackoffBase},
		BackoffMax:      metav1.Duration{Duration: st.Policy.BackoffMax},
	}
	if r.Phase == "" && st.Invalid != "" {
		r.Phase, r.Message = "Invalid", st.Invalid
	}
	if !st.AdmittedAt.IsZero() {
		t := metav1.NewTime(st.AdmittedAt)
		r.AdmittedAt = &t
	}
	if !st.WakeAt.IsZero() {
		t := metav1.NewTime(st.WakeAt)
		r.WakeAt = &t
	}
	if !st.ExpectedStart.IsZero() {
		t := metav1.NewTime(st.ExpectedStart)
		r.ExpectedStart = &t
	}
	r.ExpectedStartUnknown = st.ExpectedStartUnknown
	for _, a := range st.Attempts {
		r.Attempts = append(r.Attempts, musterv1alpha1.AttemptRecord{
			Number: a.Number, AdmittedAt: metav1.NewTime(a.AdmittedAt), EndedAt: metav1.NewTime(a.EndedAt),
			Stage: string(a.Stage), Reason: a.Reason, Message: a.Message,
		})
	}
	return r
}

// PastOf reads back, from a lifecycle record, what the engine needs to resume the group
// (lifecycle.Resume): its phase, attempts, failures and the end of its backoff.
func PastOf(r musterv1alpha1.GroupLifecycle) lifecycle.Past {
	p := lifecycle.Past{
		Phase: lifecycle.Phase(r.Phase), Reason: r.Reason, Message: r.Message,
		Attempt: r.Attempt, Failures: r.Failures,
	}
	if r.WakeAt != nil {
		p.WakeAt = r.WakeAt.Time
	}
	for _, a := range r.Attempts {
		p.Attempts = append(p.Attempts, lifecycle.Attempt{
			Number: a.Number, AdmittedAt: a.AdmittedAt.Time, EndedAt: a.EndedAt.Time,
			Stage: lifecycle.Phase(a.Stage), Reason: a.Reason, Message: a.Message,
		})
	}
	return p
}

// EncodeRecord renders the record of st (RecordOf) as the value of the
// muster.dev/lifecycle annotation.
func EncodeRecord(st engine.Status) (string, error) {
	data, err := json.Marshal(RecordOf(st))
	if err != nil {
		return "", fmt.Errorf("encoding the lifecycle record: %w", err)
	}
	return string(data), nil
}

// RecordIn decodes the muster.dev/lifecycle annotation among annotations; ok is false
// when there is none.
func RecordIn(annotations map[string]string) (rec musterv1alpha1.GroupLifecycle, ok bool, err error) {
	raw := annotations[musterv1alpha1.LifecycleAnnotation]
	if raw == "" {
		return rec, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return rec, false, fmt.Errorf("decoding the lifecycle record %q: %w", raw, err)
	}
	return rec, true, nil
}
