package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGroupLabel is the pod label whose value names the PodGroup, in the pod's
// namespace, that the pod belongs to.
const PodGroupLabel = GroupName + "/pod-group"

// PodGroupPhase is the phase of a PodGroup.
type PodGroupPhase string

// The phases upstream defines for a PodGroup.
const (
	// PodGroupPending means the group is accepted but not enough resources could be
	// allocated to it yet.
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupRunning means spec.minMember pods of the group are running.
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupScheduling means at least spec.minMember pods are scheduled but fewer
	// than spec.minMember are running.
	PodGroupScheduling PodGroupPhase = "Scheduling"
	// PodGroupUnknown means some of the spec.minMember pods are scheduled and the
	// others cannot be, for example for lack of resources.
	PodGroupUnknown PodGroupPhase = "Unknown"
	// PodGroupFinished means spec.minMember pods of the group finished successfully.
	PodGroupFinished PodGroupPhase = "Finished"
	// PodGroupFailed means at least one of the spec.minMember pods failed.
	PodGroupFailed PodGroupPhase = "Failed"
)

// PodGroup is a set of pods that must be scheduled together (a gang).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName={pg,pgs}
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes-sigs/scheduler-plugins/pull/50"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Current phase of PodGroup."
// +kubebuilder:printcolumn:name="MinMember",type=integer,JSONPath=`.spec.minMember`,description="MinMember defines the minimal number of members/tasks to run the pod group."
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`,description="The number of actively running pods."
// +kubebuilder:printcolumn:name="Succeeded",type=integer,JSONPath=`.status.succeeded`,description="The number of pods which reached phase Succeeded."
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`,description="The number of pods which reached phase Failed."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Age is the time PodGroup was created."
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
	// together; if fewer can be placed, none is started. The minimum is 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinMember int32 `json:"minMember,omitempty"`

	// MinResources is the least total of resources the members need to run
	// together; if less is available, none is started.
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`

	// ScheduleTimeoutSeconds is the longest the members may wait, in seconds, for
	// the whole group to be scheduled.
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// PodGroupStatus is the observed state of a PodGroup.
type PodGroupStatus struct {
	// Current phase of PodGroup.
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`

	// OccupiedBy is the UID of the workload (e.g. a Deployment or StatefulSet) that
	// occupies the pod group; empty until set.
	// +optional
	OccupiedBy string `json:"occupiedBy,omitempty"`

	// The number of actively running pods.
	// +optional
	Running int32 `json:"running,omitempty"`

	// The number of pods which reached phase Succeeded.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`

	// The number of pods which reached phase Failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// ScheduleStartTime is when scheduling of the group started.
	// +optional
	ScheduleStartTime metav1.Time `json:"scheduleStartTime,omitempty"`
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
