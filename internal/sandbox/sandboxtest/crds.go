package sandboxtest

import (
	"context"
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
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "pytorchjobs.kubeflow.org"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kubeflow.org", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "pytorchjobs", Singular: "pytorchjob", Kind: "PyTorchJob", ListKind: "PyTorchJobList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
	if err := e.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the PyTorchJob CRD: %v", err)
	}
	e.WaitFor(t, "the PyTorchJob CRD to be established", func(ctx context.Context) (bool, error) {
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
}
