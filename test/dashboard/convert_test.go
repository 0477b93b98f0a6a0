package dashboard

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// toUnstructured converts a typed object for the dynamic client.
func toUnstructured(obj any, apiVersion, kind string) (*unstructured.Unstructured, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u, nil
}
