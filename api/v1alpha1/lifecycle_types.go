package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupLifecycle is muster's record of a group's lifecycle, stored as JSON in the
// LifecycleAnnotation. It is written by the scheduler and read by `muster explain`.
type GroupLifecycle struct {
	// Phase is the lifecycle phase: Gathering, Queued, Binding, Starting, Running,
	// Recovering, Backoff, Impossible, Failed, Finished or Cancelled.
	Phase string `json:"phase"`
	// Reason and Message explain the last transition.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Queue is the queue the group is charged to.
	Queue string `json:"queue,omitempty"`
	// Waiting is why the last admission pass did not admit the group, in one line, and
	// WaitingKind its kind (Unschedulable, Impossible, QuotaExceeded, QuotaNeverEnough,
	// QueueNotFound, QueueNotAllowed, QueueAmbiguous, Reserved).
	Waiting     string `json:"waiting,omitempty"`
	WaitingKind string `json:"waitingKind,omitempty"`
	// Wait is the same reason as data. Records written before muster recorded it have
	// only Waiting and WaitingKind.
	Wait *WaitReason `json:"wait,omitempty"`
	// MinMember is the group's minimum membership. Member counts are not recorded: they
	// change with every pod, and readers count the pods themselves.
	MinMember int `json:"minMember"`
	// Attempt counts admissions; Failures the failed ones; MaxRetries the retries allowed.
	Attempt    int `json:"attempt"`
	Failures   int `json:"failures"`
	MaxRetries int `json:"maxRetries"`
	// StartTimeout, RecoveryTimeout, BackoffBase and BackoffMax are the group's policy.
	StartTimeout    metav1.Duration `json:"startTimeout"`
	RecoveryTimeout metav1.Duration `json:"recoveryTimeout"`
	BackoffBase     metav1.Duration `json:"backoffBase"`
	BackoffMax      metav1.Duration `json:"backoffMax"`
	// AdmittedAt is when the current attempt was admitted.
	AdmittedAt *metav1.Time `json:"admittedAt,omitempty"`
	// WakeAt is when the group's next timer fires: the start- or recovery-timeout, or
	// the end of the backoff.
	WakeAt *metav1.Time `json:"wakeAt,omitempty"`
	// ExpectedStart is when a queued group is expected to be admitted, when muster can
	// tell; ExpectedStartUnknown says why it cannot, otherwise.
	ExpectedStart        *metav1.Time `json:"expectedStart,omitempty"`
	ExpectedStartUnknown string       `json:"expectedStartUnknown,omitempty"`
	// Attempts lists the attempts that ended.
	Attempts []AttemptRecord `json:"attempts,omitempty"`
}

// AttemptRecord is one ended attempt of a group.
type AttemptRecord struct {
	Number     int         `json:"number"`
	AdmittedAt metav1.Time `json:"admittedAt"`
	EndedAt    metav1.Time `json:"endedAt"`
	// Stage is the phase the attempt was in when it ended.
	Stage   string `json:"stage"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Preemption, for a Preempted attempt, is how it was preempted: Priority (a group
	// of higher priority took its nodes) or Reclaim (the queue that lent it quota took
	// the quota back); PreemptedFor names the group the nodes were taken for. Empty in
	// records written before muster recorded them.
	Preemption   string `json:"preemption,omitempty"`
	PreemptedFor string `json:"preemptedFor,omitempty"`
}
