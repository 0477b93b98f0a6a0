// Package v1alpha1 is muster's own API, group muster.dev version v1alpha1.
//
// It holds the Queue custom resource (cluster-scoped: quota, namespace selector,
// priority, weight and per-group policy defaults), the Configuration file that the
// scheduler reads at start-up (a versioned file format, not a custom resource), and the
// annotation and label keys by which users attach pods and groups to muster.
//
// +kubebuilder:object:generate=true
// +groupName=muster.dev
package v1alpha1
