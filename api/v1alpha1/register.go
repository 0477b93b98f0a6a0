package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of muster's own resources and configuration file.
const GroupName = "muster.dev"

// GroupVersion is the group and version of this package: muster.dev/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder registers this package's custom resources (Queue, QueueList) with a
	// runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds Queue and QueueList to a scheme under GroupVersion.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the custom resource kinds. Configuration is a file format,
// not an API object served by the API server, so it is not registered.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &Queue{}, &QueueList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
