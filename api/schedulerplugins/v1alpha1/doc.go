// Package v1alpha1 mirrors the public schema of the scheduler-plugins coscheduling
// PodGroup, group scheduling.x-k8s.io version v1alpha1, which the Kubeflow
// training-operator, Kubeflow Trainer v2 and mpi-operator create for gangs. Pods join
// one with the label scheduling.x-k8s.io/pod-group.
//
// muster reads these objects and writes their status; it does not depend on the
// scheduler-plugins module. The schema follows upstream field for field so that the
// CRD generated from these types accepts every manifest the upstream CRD accepts.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.x-k8s.io
package v1alpha1
