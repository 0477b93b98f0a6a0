package engine

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// RecordOf turns the status of a group into the lifecycle record the scheduler writes on
// the group object (musterv1alpha1.LifecycleAnnotation), for explain to read and for a
// restarted scheduler to resume from (PastOf).
func RecordOf(st Status) musterv1alpha1.GroupLifecycle {
	r := musterv1alpha1.GroupLifecycle{
		Phase: string(st.Phase), Reason: st.Reason, Message: st.Message, Queue: st.Queue,
		Waiting: st.Waiting, WaitingKind: st.WaitingKind, Wait: WaitRecord(st),
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
			Preemption: string(a.Preemption), PreemptedFor: a.PreemptedFor,
		})
	}
	return r
}

// Later reports whether lifecycle record a is further along than b: it has begun more
// attempts, or as many with more of them failed, or more of them ended. A group's record
// only moves forward, and muster writes copies of it on more than one object (a plain
// group's member pods, the batch Job it suspended), not all at once: of two copies, the
// later is the one to resume from.
func Later(a, b musterv1alpha1.GroupLifecycle) bool {
	if a.Attempt != b.Attempt {
		return a.Attempt > b.Attempt
	}
	if a.Failures != b.Failures {
		return a.Failures > b.Failures
	}
	return len(a.Attempts) > len(b.Attempts)
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
			Preemption: lifecycle.Preemption(a.Preemption), PreemptedFor: a.PreemptedFor,
		})
	}
	return p
}

// EncodeRecord renders the record of st (RecordOf) as the value of the
// muster.dev/lifecycle annotation.
func EncodeRecord(st Status) (string, error) {
	data, err := json.Marshal(RecordOf(st))
	if err != nil {
		return "", fmt.Errorf("encoding the lifecycle record: %w", err)
	}
	return string(data), nil
}

// WaitRecord returns the wait reason of st as the record stores it, or nil when the
// group does not wait.
func WaitRecord(st Status) *musterv1alpha1.WaitReason {
	if st.Wait == nil {
		return nil
	}
	r := st.Wait
	w := &musterv1alpha1.WaitReason{
		Kind: musterv1alpha1.WaitKind(r.Kind), Queue: r.Queue, Namespace: r.Namespace,
		Candidates:  append([]string(nil), r.Candidates...),
		Placement:   diagnosisRecord(r.Diagnosed()),
		ReservedFor: r.ReservedFor, ForPreemption: r.ForPreemption,
		Preempting: append([]string(nil), st.Preempting...), Reclaiming: st.Reclaiming && len(st.Preempting) > 0,
	}
	if x := st.ExtendedByDRA; x != nil {
		w.ExtendedByDRA = &musterv1alpha1.ExtendedByDRA{Resource: x.Resource, DeviceClass: x.DeviceClass}
	}
	if r.Kind == queue.QuotaExceeded || r.Kind == queue.QuotaNeverEnough {
		w.Quota = quotaRecord(*r)
	}
	return w
}

func quotaRecord(r queue.Reason) *musterv1alpha1.QuotaWait {
	q := func(v int64) resource.Quantity { return cluster.Quantity(r.Resource, v) }
	w := &musterv1alpha1.QuotaWait{
		Resource: r.Resource, Need: q(r.Need), Used: q(r.Used), Quota: q(r.Quota),
		Cohort: r.Cohort, Reclaimable: r.Reclaimable, BorrowingPaused: r.BorrowingPaused,
	}
	if r.Cohort != "" {
		used, quota, limit := q(r.CohortUsed), q(r.CohortQuota), q(r.Limit)
		w.CohortUsed, w.CohortQuota, w.Limit = &used, &quota, &limit
	}
	return w
}

// diagnosisRecord returns placement's diagnosis as the record stores it, or nil for nil.
func diagnosisRecord(d *placement.Diagnosis) *musterv1alpha1.PlacementDiagnosis {
	if d == nil {
		return nil
	}
	out := &musterv1alpha1.PlacementDiagnosis{
		Code: musterv1alpha1.PlacementCode(d.Code), MinMember: d.MinMember, Members: d.Members, Placed: d.Placed,
		EmptyRoom: d.EmptyRoom, Topology: d.Topology,
	}
	for _, s := range d.Shapes {
		out.Shapes = append(out.Shapes, shapeRecord(s))
	}
	if b := d.Blocked; b != nil {
		out.Blocked = &musterv1alpha1.BlockedPlacement{Placed: b.Placed, Shape: shapeRecord(b.Shape)}
	}
	if t := d.Task; t != nil {
		out.Task = &musterv1alpha1.TaskShortfall{Task: t.Task, Minimum: t.Minimum, Members: t.Members, Placed: t.Placed}
	}
	return out
}

func shapeRecord(s placement.ShapeDiagnosis) musterv1alpha1.ShapeDiagnosis {
	rec := musterv1alpha1.ShapeDiagnosis{Shape: s.Shape, Members: s.Members, Nodes: s.Nodes,
		Available: s.Available, Room: s.Room}
	if len(s.Requests) > 0 {
		rec.Requests = corev1.ResourceList{}
		for name, v := range s.Requests {
			rec.Requests[name] = cluster.Quantity(name, v)
		}
	}
	for _, c := range s.Reasons {
		rec.Reasons = append(rec.Reasons, musterv1alpha1.NodeReasonCount{Kind: string(c.Kind), Detail: c.Detail,
			Plugin: c.Plugin, Nodes: c.Nodes})
	}
	if sf := s.Shortfall; sf != nil {
		rec.Shortfall = &musterv1alpha1.Shortfall{Resource: sf.Resource, Need: cluster.Quantity(sf.Resource, sf.Need),
			Largest: cluster.Quantity(sf.Resource, sf.Largest), Eligible: sf.Eligible}
	}
	return rec
}

// diagnosisOf reads a recorded diagnosis back as placement's, so that it renders with
// placement's own words (Diagnosis.String); nil for nil. A record is a claim (a tenant
// can write one): counts are rendered as they are, never used to index.
func diagnosisOf(r *musterv1alpha1.PlacementDiagnosis) *placement.Diagnosis {
	if r == nil {
		return nil
	}
	d := &placement.Diagnosis{Code: placement.Code(r.Code), MinMember: r.MinMember, Members: r.Members,
		Placed: r.Placed, EmptyRoom: r.EmptyRoom, Topology: r.Topology}
	for _, s := range r.Shapes {
		d.Shapes = append(d.Shapes, shapeOf(s))
	}
	if b := r.Blocked; b != nil {
		d.Blocked = &placement.Blocked{Placed: b.Placed, Shape: shapeOf(b.Shape)}
	}
	if t := r.Task; t != nil {
		d.Task = &placement.TaskShortfall{Task: t.Task, Minimum: t.Minimum, Members: t.Members, Placed: t.Placed}
	}
	return d
}

func shapeOf(s musterv1alpha1.ShapeDiagnosis) placement.ShapeDiagnosis {
	shape := placement.ShapeDiagnosis{Shape: s.Shape, Members: s.Members, Requests: cluster.FromList(s.Requests),
		Nodes: s.Nodes, Available: s.Available, Room: s.Room}
	for _, c := range s.Reasons {
		shape.Reasons = append(shape.Reasons, placement.ReasonCount{
			NodeReason: placement.NodeReason{Kind: placement.ReasonKind(c.Kind), Detail: c.Detail, Plugin: c.Plugin},
			Nodes:      c.Nodes})
	}
	if sf := s.Shortfall; sf != nil {
		res := cluster.FromList(corev1.ResourceList{sf.Resource: sf.Need})
		largest := cluster.FromList(corev1.ResourceList{sf.Resource: sf.Largest})
		shape.Shortfall = &placement.Shortfall{Resource: sf.Resource, Need: res[sf.Resource],
			Largest: largest[sf.Resource], Eligible: sf.Eligible}
	}
	return shape
}

// ReasonOf reads a recorded wait reason back as the queue's, so that it renders with the
// queue's own words (queue.Reason.String); the preemption in flight (Preempting) is not
// part of it. Unknown kinds are kept as they are and render as their name.
func ReasonOf(w musterv1alpha1.WaitReason) queue.Reason {
	r := queue.Reason{Kind: queue.ReasonKind(w.Kind), Queue: w.Queue, Namespace: w.Namespace,
		Candidates: append([]string(nil), w.Candidates...), Diagnosis: diagnosisOf(w.Placement),
		ReservedFor: w.ReservedFor, ForPreemption: w.ForPreemption}
	if q := w.Quota; q != nil {
		v := func(x *resource.Quantity) int64 {
			if x == nil {
				return 0
			}
			return cluster.FromList(corev1.ResourceList{q.Resource: *x})[q.Resource]
		}
		r.Resource, r.Need, r.Used, r.Quota = q.Resource, v(&q.Need), v(&q.Used), v(&q.Quota)
		r.Cohort, r.CohortUsed, r.CohortQuota, r.Limit = q.Cohort, v(q.CohortUsed), v(q.CohortQuota), v(q.Limit)
		r.Reclaimable, r.BorrowingPaused = q.Reclaimable, q.BorrowingPaused
	}
	return r
}
