package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Volcano's scheduling resources.
const GroupName = "scheduling.volcano.sh"

// GroupVersion is the group and version of this package: scheduling.volcano.sh/v1beta1.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

var (
	// SchemeBuilder registers PodGroup and PodGroupList with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds PodGroup and PodGroupList to a scheme under GroupVersion.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers this package's kinds.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &PodGroup{}, &PodGroupList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
