package sandboxtest

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallPyTorchJobCRD serves kubeflow.org/v1 PyTorchJob (schemaless), as the
// training-operator's CRD does, unless it is served already. No controller acts on
// PyTorchJobs in the sandbox: a test creates the pods the operator would.
func (e *Env) InstallPyTorchJobCRD(t testing.TB) {
	t.Helper()
	e.InstallCRD(t, "kubeflow.org", "PyTorchJob", "pytorchjobs", "v1")
}

// InstallRayClusterCRD serves ray.io/v1 RayCluster (schemaless), as KubeRay's CRD
// does, unless it is served already. No controller acts on RayClusters in the sandbox.
func (e *Env) InstallRayClusterCRD(t testing.TB) {
	t.Helper()
	e.InstallCRD(t, "ray.io", "RayCluster", "rayclusters", "v1")
}

// InstallCRD serves the namespaced kind of group at versions (the first stored),
// schemaless, under plural, unless it is served already, and waits until it is
// established. It returns the CRD as created.
func (e *Env) InstallCRD(t testing.TB, group, kind, plural string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: ptr.To(true),
			}},
		})
	}
	if err := e.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the %s CRD: %v", kind, err)
	}
	e.WaitFor(t, "the "+kind+" CRD to be established", func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return crd
}
