package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Queue is a cluster-scoped admission queue for gangs: it caps the resources its
// admitted groups may hold, orders its groups by priority and fairness, and supplies
// defaults for the per-group settings.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mq,categories=muster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="GPU Quota",type=string,JSONPath=`.spec.quota.nvidia\.com/gpu`,description="nvidia.com/gpu the queue's admitted groups may hold; empty means unlimited."
// +kubebuilder:printcolumn:name="GPU Used",type=string,JSONPath=`.status.used.nvidia\.com/gpu`,description="nvidia.com/gpu held by admitted groups."
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admittedGroups`,description="Groups admitted through this queue."
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingGroups`,description="Groups waiting in this queue."
// +kubebuilder:printcolumn:name="Cohort",type=string,JSONPath=`.spec.cohort`,priority=1,description="The queues that lend each other unused quota."
// +kubebuilder:printcolumn:name="GPU Borrowed",type=string,JSONPath=`.status.borrowed.nvidia\.com/gpu`,priority=1,description="nvidia.com/gpu held beyond the quota, lent by the cohort."
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`,priority=1
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`,priority=1
// +kubebuilder:printcolumn:name="Share",type=integer,JSONPath=`.status.weightedShare`,priority=1,description="Dominant share of the cluster per unit of weight, in thousandths."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Queue struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the queue's quota, ordering and defaults.
	// +optional
	Spec QueueSpec `json:"spec,omitempty"`

	// status is the queue's observed usage, written by muster.
	// +optional
	Status QueueStatus `json:"status,omitempty"`
}

// QueueSpec is the desired behaviour of a Queue.
//
// +kubebuilder:validation:XValidation:rule="!has(self.borrowingLimit) || (has(self.cohort) && size(self.cohort) > 0)",message="spec.borrowingLimit requires spec.cohort: a queue borrows only from its cohort"
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || (has(self.cohort) && size(self.cohort) > 0)",message="spec.lendingLimit requires spec.cohort: a queue lends only to its cohort"
type QueueSpec struct {
	// quota is the most of each named resource that the groups admitted through this
	// queue may hold together, counted from their members' requests. Resources not
	// named are not limited; an absent or empty quota means unlimited.
	// +optional
	Quota corev1.ResourceList `json:"quota,omitempty"`

	// namespaceSelector selects the namespaces whose groups fall into this queue when
	// they do not name a queue themselves. A nil selector selects no namespace; an
	// empty selector selects every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// priority orders queues: groups of a higher-priority queue are considered for
	// admission before those of a lower one. Defaults to 0.
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// cohort names a set of queues that lend each other the quota they do not use. A
	// queue of a cohort may hold more than its quota of a resource while the cohort's
	// queues together hold no more than the sum of their quotas of it; when a group
	// within its own queue's quota finds that quota lent out, muster evicts groups of the
	// borrowing queues, whatever their priority, to give it back. Only resources a
	// queue's quota lists are lent and borrowed. Empty: the queue neither lends nor
	// borrows.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Cohort string `json:"cohort,omitempty"`

	// borrowingLimit caps, per resource, how much more than its quota this queue may
	// hold by borrowing from its cohort. Resources not listed are capped by the
	// cohort's unused quota alone. Requires cohort.
	// +optional
	BorrowingLimit corev1.ResourceList `json:"borrowingLimit,omitempty"`

	// lendingLimit caps, per resource, how much of this queue's quota it lends to its
	// cohort; the rest stays its own, idle or not, and is never borrowed by another
	// queue. Resources not listed are lent whole. Requires cohort.
	// +optional
	LendingLimit corev1.ResourceList `json:"lendingLimit,omitempty"`

	// weight is this queue's share, relative to the other queues of equal priority,
	// when muster orders them by fairness. Defaults to 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	Weight int32 `json:"weight,omitempty"`

	// defaults are the per-group settings of this queue's groups, overriding the
	// configuration file's groupDefaults field by field; a group's own annotations
	// override these in turn.
	// +optional
	Defaults *GroupPolicy `json:"defaults,omitempty"`
}

// GroupPolicy holds the timeouts and retry settings of a group's lifecycle. Every field
// is optional: an unset field falls back to the next, less specific, level (group
// annotation, then Queue defaults, then the configuration's groupDefaults).
type GroupPolicy struct {
	// startTimeout is how long a bound group may take to have minMember members Ready
	// (or Succeeded) before it is evicted and retried, e.g. "5m".
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	// +optional
	StartTimeout *metav1.Duration `json:"startTimeout,omitempty"`

	// recoveryTimeout is how long a running group that lost members may stay below
	// minMember before the whole group is evicted and requeued, e.g. "5m".
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	// +optional
	RecoveryTimeout *metav1.Duration `json:"recoveryTimeout,omitempty"`

	// maxRetries is how many times a group is evicted and requeued after a failed
	// start or recovery before it is marked Failed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRetries *int32 `json:"maxRetries,omitempty"`

	// backoffBase is the delay before a failed group is queued again the first time;
	// each later retry doubles it, up to backoffMax. E.g. "30s".
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	// +optional
	BackoffBase *metav1.Duration `json:"backoffBase,omitempty"`

	// backoffMax caps the requeue delay, e.g. "10m".
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	// +optional
	BackoffMax *metav1.Duration `json:"backoffMax,omitempty"`
}

// QueueStatus is the observed state of a Queue.
type QueueStatus struct {
	// admittedGroups is the number of groups admitted through this queue that still
	// hold resources.
	// +optional
	AdmittedGroups int32 `json:"admittedGroups,omitempty"`

	// pendingGroups is the number of groups waiting in this queue for admission.
	// +optional
	PendingGroups int32 `json:"pendingGroups,omitempty"`

	// used is the sum of the requests of the admitted groups' members, per resource.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// borrowed is, per resource of the quota, how much of used is beyond the quota: what
	// the queue holds on quota lent by the other queues of its cohort. Groups of the
	// lending queues may reclaim it. Absent when the queue borrows nothing.
	// +optional
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`

	// weightedShare is the queue's dominant share of the cluster divided by its weight,
	// in thousandths: the largest fraction of a resource's cluster-wide allocatable that
	// the queue's admitted groups hold, times 1000, over spec.weight. Among queues of
	// equal priority the one with the lowest weightedShare is offered capacity first.
	// +optional
	WeightedShare int64 `json:"weightedShare,omitempty"`

	// conditions are the latest observations of the queue's state.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// QueueList is a list of Queues.
//
// +kubebuilder:object:root=true
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the queues.
	Items []Queue `json:"items"`
}

// WithFallback returns p with every unset field taken from fallback: the merge of a
// more specific policy (p) over a less specific one. Neither input is modified; the
// result shares no pointers with them.
func (p GroupPolicy) WithFallback(fallback GroupPolicy) GroupPolicy {
	out := *p.DeepCopy()
	fb := fallback.DeepCopy()
	if out.StartTimeout == nil {
		out.StartTimeout = fb.StartTimeout
	}
	if out.RecoveryTimeout == nil {
		out.RecoveryTimeout = fb.RecoveryTimeout
	}
	if out.MaxRetries == nil {
		out.MaxRetries = fb.MaxRetries
	}
	if out.BackoffBase == nil {
		out.BackoffBase = fb.BackoffBase
	}
	if out.BackoffMax == nil {
		out.BackoffMax = fb.BackoffMax
	}
	return out
}
