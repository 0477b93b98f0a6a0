// Package v1beta1 mirrors the public schema of Volcano's PodGroup, group
// scheduling.volcano.sh version v1beta1. Pods join one with the annotation
// scheduling.k8s.io/group-name.
//
// muster reads these objects and writes their status; it does not depend on Volcano's
// modules. The schema follows upstream so that the CRD generated from these types
// accepts the manifests Volcano-style producers write.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.volcano.sh
package v1beta1
