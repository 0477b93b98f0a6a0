package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupNameAnnotation is the pod annotation whose value names the PodGroup, in the
// pod's namespace, that the pod belongs to.
const GroupNameAnnotation = "scheduling.k8s.io/group-name"

// DefaultQueue is the queue a PodGroup names when spec.queue is not set.
const DefaultQueue = "default"

// PodGroupPhase is the phase of a PodGroup.
type PodGroupPhase string

// The phases Volcano defines for a PodGroup.
const (
	// PodGroupPending means the group is accepted but not enough resources could be
	// allocated to it yet.
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupRunning means spec.minMember pods of the group are running.
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupUnknown means some of the spec.minMember pods run and the others
	// cannot be scheduled.
	PodGroupUnknown PodGroupPhase = "Unknown"
	// PodGroupInqueue means the group was admitted and its controller may create
	// its pods; it lies between Pending and Running.
	PodGroupInqueue PodGroupPhase = "Inqueue"
	// PodGroupCompleted means all pods of the group completed.
	PodGroupCompleted PodGroupPhase = "Completed"
)

// PodGroupConditionType is the type of a PodGroupCondition.
type PodGroupConditionType string

// The condition types Volcano defines for a PodGroup.
const (
	// PodGroupUnschedulableType means the group could not be scheduled.
	PodGroupUnschedulableType PodGroupConditionType = "Unschedulable"
	// PodGroupScheduled means the group was scheduled.
	PodGroupScheduled PodGroupConditionType = "Scheduled"
)

// NetworkTopologyMode is how strictly a group keeps to its network topology tier.
// +kubebuilder:validation:Enum=hard;soft
type NetworkTopologyMode string

// The network topology modes.
const (
	// HardNetworkTopologyMode means the group must not cross the allowed tier.
	HardNetworkTopologyMode NetworkTopologyMode = "hard"
	// SoftNetworkTopologyMode means the group should not cross the allowed tier.
	SoftNetworkTopologyMode NetworkTopologyMode = "soft"
)

// PodGroup is a set of pods that must be scheduled together (a gang).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=podgroups,shortName={pg,podgroup-v1beta1}
// +kubebuilder:printcolumn:name="STATUS",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="minMember",type=integer,JSONPath=`.spec.minMember`
// +kubebuilder:printcolumn:name="RUNNINGS",type=integer,JSONPath=`.status.running`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="QUEUE",type=string,priority=1,JSONPath=`.spec.queue`
type PodGroup struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Specification of the desired behavior of the pod group.
	// +optional
	Spec PodGroupSpec `json:"spec,omitempty"`

	// Status represents the current information about a pod group.
	// This data may not be up to date.
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupSpec is the desired state of a PodGroup.
type PodGroupSpec struct {
	// MinMember is the least number of member pods that must be able to run
	// together; if fewer can be placed, none is started.
	// +optional
	MinMember int32 `json:"minMember,omitempty"`

	// MinTaskMember is the least number of pods of each named task that must be
	// able to run together; if a task falls short, none is started.
	// +optional
	MinTaskMember map[string]int32 `json:"minTaskMember,omitempty"`

	// Queue is the Volcano queue the group draws resources from. Defaults to
	// "default".
	// +kubebuilder:default=default
	// +optional
	Queue string `json:"queue,omitempty"`

	// PriorityClassName is the PriorityClass giving the group's priority.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// MinResources is the least total of resources the members need to run
	// together; if less is available, none is started.
	// +optional
	MinResources *corev1.ResourceList `json:"minResources,omitempty"`

	// NetworkTopology limits how far apart in the network the members may be
	// placed, in Volcano's HyperNode tiers.
	// +optional
	NetworkTopology *NetworkTopologySpec `json:"networkTopology,omitempty"`

	// Preemptable says whether the group's pods may be preempted.
	// +optional
	Preemptable bool `json:"preemptable,omitempty"`
}

// NetworkTopologySpec is a group's network topology constraint.
type NetworkTopologySpec struct {
	// Mode is whether the constraint is required (hard) or preferred (soft).
	// +kubebuilder:default=hard
	// +optional
	Mode NetworkTopologyMode `json:"mode,omitempty"`

	// HighestTierAllowed is the highest tier, by number, the group may span.
	// +optional
	HighestTierAllowed *int `json:"highestTierAllowed,omitempty"`

	// HighestTierName is the highest tier, by name, the group may span; it may not
	// be set together with HighestTierAllowed.
	// +optional
	HighestTierName string `json:"highestTierName,omitempty"`
}

// PodGroupStatus is the observed state of a PodGroup.
type PodGroupStatus struct {
	// Current phase of PodGroup.
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`

	// The conditions of PodGroup.
	// +optional
	Conditions []PodGroupCondition `json:"conditions,omitempty"`

	// The number of actively running pods.
	// +optional
	Running int32 `json:"running,omitempty"`

	// The number of pods which reached phase Succeeded.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`

	// The number of pods which reached phase Failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`
}

// PodGroupCondition is one observation of a PodGroup's state.
type PodGroupCondition struct {
	// Type is the type of the condition.
	// +optional
	Type PodGroupConditionType `json:"type,omitempty"`

	// Status is the status of the condition: True, False or Unknown.
	// +optional
	Status corev1.ConditionStatus `json:"status,omitempty"`

	// TransitionID identifies the transition that set the condition.
	// +optional
	TransitionID string `json:"transitionID,omitempty"`

	// LastTransitionTime is when the condition last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason is a one-word CamelCase reason for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message is a human-readable explanation of the last transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// PodGroupList is a list of PodGroups.
//
// +kubebuilder:object:root=true
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of PodGroups.
	Items []PodGroup `json:"items"`
}
