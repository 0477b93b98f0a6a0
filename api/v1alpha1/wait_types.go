package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// WaitKind classifies why a group waits. The kinds are the scheduler's queue reasons.
type WaitKind string

// The kinds of WaitReason.
const (
	// WaitQueueNotFound: the group names a queue that does not exist.
	WaitQueueNotFound WaitKind = "QueueNotFound"
	// WaitQueueNotAllowed: the group's queue does not admit its namespace.
	WaitQueueNotAllowed WaitKind = "QueueNotAllowed"
	// WaitQueueAmbiguous: the group names no queue and several admit its namespace.
	WaitQueueAmbiguous WaitKind = "QueueAmbiguous"
	// WaitQuotaExceeded: the group waits for quota (WaitReason.Quota says which).
	WaitQuotaExceeded WaitKind = "QuotaExceeded"
	// WaitQuotaNeverEnough: the group needs more than its queue may ever hold.
	WaitQuotaNeverEnough WaitKind = "QuotaNeverEnough"
	// WaitPlacement: the group does not fit the cluster (WaitReason.Placement says why).
	WaitPlacement WaitKind = "Placement"
	// WaitReserved: the group fits only on nodes reserved for another group.
	WaitReserved WaitKind = "Reserved"
)

// WaitReason is why the scheduler's last admission pass did not admit a group, as data:
// GroupLifecycle.Waiting is its text. Readers (muster explain, the dashboard) choose
// what to say from these fields and never parse the text.
type WaitReason struct {
	// Kind is one of the WaitKind constants.
	Kind WaitKind `json:"kind"`
	// Queue names the queue, for the queue and quota kinds.
	Queue string `json:"queue,omitempty"`
	// Namespace is the group's namespace, for QueueNotAllowed and QueueAmbiguous.
	Namespace string `json:"namespace,omitempty"`
	// Candidates are the queues that admit the namespace, for QueueAmbiguous.
	Candidates []string `json:"candidates,omitempty"`
	// Quota describes the first resource over quota, for QuotaExceeded and
	// QuotaNeverEnough.
	Quota *QuotaWait `json:"quota,omitempty"`
	// Placement is the scheduler's diagnosis of the group's fit, for Placement.
	Placement *PlacementDiagnosis `json:"placement,omitempty"`
	// ReservedFor names the group the nodes are reserved for, for Reserved;
	// ForPreemption is true when they are being freed by preemption for it.
	ReservedFor   string `json:"reservedFor,omitempty"`
	ForPreemption bool   `json:"forPreemption,omitempty"`
	// Preempting lists the groups being evicted to make room for this one, while they
	// release their nodes; Reclaiming is true when they are evicted to give its queue
	// back the quota it lent to its cohort, false when for priority.
	Preempting []string `json:"preempting,omitempty"`
	Reclaiming bool     `json:"reclaiming,omitempty"`
	// ExtendedByDRA, for a group that asks for an extended resource no node has which a
	// DeviceClass provides through DRA, names the resource and the class: the class's
	// devices serve the request, and the group waits for them.
	ExtendedByDRA *ExtendedByDRA `json:"extendedByDRA,omitempty"`
}

// ExtendedByDRA is an extended resource a group asks for that no node has in its
// allocatable and DeviceClass provides through DRA (its spec.extendedResourceName, or
// the implicit deviceclass.resource.kubernetes.io/ name of the class).
type ExtendedByDRA struct {
	Resource    corev1.ResourceName `json:"resource"`
	DeviceClass string              `json:"deviceClass"`
}

// QuotaWait is the quota a group waits for: it needs Need of Resource, and its queue's
// admitted groups hold Used of Quota.
type QuotaWait struct {
	Resource corev1.ResourceName `json:"resource"`
	Need     resource.Quantity   `json:"need"`
	Used     resource.Quantity   `json:"used"`
	Quota    resource.Quantity   `json:"quota"`
	// Cohort names the queue's cohort when the cohort, not the queue, is what is short,
	// or what bounds the queue's borrowing; CohortUsed and CohortQuota are then the
	// cohort's usage and summed quota of Resource, and Limit the most the queue may
	// hold of it (its quota plus what it may borrow).
	Cohort      string             `json:"cohort,omitempty"`
	CohortUsed  *resource.Quantity `json:"cohortUsed,omitempty"`
	CohortQuota *resource.Quantity `json:"cohortQuota,omitempty"`
	Limit       *resource.Quantity `json:"limit,omitempty"`
	// Reclaimable is true when the group is within its own queue's quota: the room it
	// needs is lent to other queues of the cohort, and the scheduler takes it back.
	Reclaimable bool `json:"reclaimable,omitempty"`
	// BorrowingPaused is true when the group would borrow but may not now: a group of
	// another queue of the cohort is reclaiming its queue's quota.
	BorrowingPaused bool `json:"borrowingPaused,omitempty"`
}

// PlacementCode classifies a failed placement.
type PlacementCode string

const (
	// PlacementUnschedulable: the group would fit the cluster empty, but not now.
	PlacementUnschedulable PlacementCode = "Unschedulable"
	// PlacementImpossible: the group does not fit even an empty cluster.
	PlacementImpossible PlacementCode = "Impossible"
)

// PlacementDiagnosis is the scheduler's diagnosis of why a group could not be placed,
// per shape of identical members, with the nodes rejected for each reason counted
// ("0/2 nodes are available: 2 Insufficient nvidia.com/gpu").
type PlacementDiagnosis struct {
	// Code is Unschedulable or Impossible.
	Code PlacementCode `json:"code"`
	// MinMember and Members are the group's minimum and its member count; Placed is
	// how many members the best attempt could place.
	MinMember int `json:"minMember"`
	Members   int `json:"members"`
	Placed    int `json:"placed"`
	// EmptyRoom, for an Impossible group whose every shape fits some node, is how
	// many members an empty cluster could take.
	EmptyRoom int `json:"emptyRoom,omitempty"`
	// Topology explains a required-domain failure, when there was one.
	Topology string `json:"topology,omitempty"`
	// Shapes diagnoses each shape of members.
	Shapes []ShapeDiagnosis `json:"shapes,omitempty"`
	// Blocked, when one of kube-scheduler's filter plugins stopped the best attempt
	// (on the empty cluster, for an Impossible group), says after how many members and
	// why no node could take the next.
	Blocked *BlockedPlacement `json:"blocked,omitempty"`
	// Task, when set, is the task whose minimum (a Volcano PodGroup's
	// spec.minTaskMember) kept the group out.
	Task *TaskShortfall `json:"task,omitempty"`
}

// TaskShortfall is a task of a group short of its minimum: it has Members of the
// Minimum it needs, and the best placement attempt placed Placed of them.
type TaskShortfall struct {
	Task    string `json:"task"`
	Minimum int    `json:"minimum"`
	Members int    `json:"members"`
	Placed  int    `json:"placed"`
}

// BlockedPlacement is where a placement attempt stopped: Placed members had nodes, and
// Shape counts why no node could take the next member of its shape.
type BlockedPlacement struct {
	Placed int            `json:"placed"`
	Shape  ShapeDiagnosis `json:"shape"`
}

// ShapeDiagnosis explains one shape of a group's members.
type ShapeDiagnosis struct {
	// Shape names the shape by its first member and count ("job-worker-0 ×8").
	Shape string `json:"shape"`
	// Members is the number of members of this shape.
	Members int `json:"members"`
	// Requests is what one member asks of a node.
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Nodes is the number of nodes considered; Available of them could take one
	// member now, and Room members of this shape in all.
	Nodes     int `json:"nodes"`
	Available int `json:"available"`
	Room      int `json:"room"`
	// Reasons counts the nodes rejected for each reason, most frequent first.
	Reasons []NodeReasonCount `json:"reasons,omitempty"`
	// Shortfall is set when the shape fits no eligible node even on an empty cluster.
	Shortfall *Shortfall `json:"shortfall,omitempty"`
}

// NodeReasonCount is one reason nodes were rejected for a member, in kube-scheduler's
// terms, with the number of nodes it applied to.
type NodeReasonCount struct {
	// Kind is the reason: NodeNotReady, NodeUnschedulable, NodeAffinityMismatch,
	// UntoleratedTaint, InsufficientResource, TooManyPods, MissingTopologyLabel,
	// OutsideDomain, Reserved, NodeNotFound, or FilterRejected (one of
	// kube-scheduler's filter plugins, named by Plugin, rejected the nodes).
	Kind string `json:"kind"`
	// Detail is the taint, resource name, label key or domain the reason is about, or
	// the plugin's message ("node(s) didn't match pod anti-affinity rules").
	Detail string `json:"detail,omitempty"`
	// Plugin names the kube-scheduler plugin, for FilterRejected.
	Plugin string `json:"plugin,omitempty"`
	// Nodes is how many nodes were rejected for it.
	Nodes int `json:"nodes"`
}

// Shortfall says that no eligible node, even empty, has Need of Resource for one
// member: the largest has Largest. Eligible counts the nodes that passed every other
// check.
type Shortfall struct {
	Resource corev1.ResourceName `json:"resource"`
	Need     resource.Quantity   `json:"need"`
	Largest  resource.Quantity   `json:"largest"`
	Eligible int                 `json:"eligible"`
}
