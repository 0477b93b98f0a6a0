package deploy

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
)

// wantCRD is what a test expects of one embedded CRD.
type wantCRD struct {
	group      string
	kind       string
	version    string
	scope      apiextensionsv1.ResourceScope
	shortNames []string
	// statusSubresource is whether status is a subresource; Volcano's upstream CRD
	// has none, and mirroring it matters to clients that update status.
	statusSubresource bool
	// fields are dotted paths that must exist in the version's schema.
	fields []string
}

var wantCRDs = map[string]wantCRD{
	"queues.muster.dev": {
		group: "muster.dev", kind: "Queue", version: "v1alpha1",
		scope: apiextensionsv1.ClusterScoped, shortNames: []string{"mq"}, statusSubresource: true,
		fields: []string{
			"spec.quota", "spec.namespaceSelector", "spec.priority", "spec.weight",
			"spec.defaults.startTimeout", "spec.defaults.recoveryTimeout",
			"spec.defaults.maxRetries", "spec.defaults.backoffBase", "spec.defaults.backoffMax",
			"status.admittedGroups", "status.pendingGroups", "status.used", "status.conditions",
		},
	},
	"podgroups.scheduling.x-k8s.io": {
		group: "scheduling.x-k8s.io", kind: "PodGroup", version: "v1alpha1",
		scope: apiextensionsv1.NamespaceScoped, shortNames: []string{"pg", "pgs"}, statusSubresource: true,
		fields: []string{
			"spec.minMember", "spec.minResources", "spec.scheduleTimeoutSeconds",
			"status.phase", "status.occupiedBy", "status.running", "status.succeeded",
			"status.failed", "status.scheduleStartTime",
		},
	},
	"podgroups.scheduling.volcano.sh": {
		group: "scheduling.volcano.sh", kind: "PodGroup", version: "v1beta1",
		scope: apiextensionsv1.NamespaceScoped, shortNames: []string{"pg", "podgroup-v1beta1"},
		fields: []string{
			"spec.minMember", "spec.minTaskMember", "spec.queue", "spec.priorityClassName",
			"spec.minResources", "status.phase", "status.conditions", "status.running",
			"status.succeeded", "status.failed",
		},
	},
}

func TestCRDsMatchAPI(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatalf("CRDs() error: %v", err)
	}
	seen := map[string]bool{}
	for _, crd := range crds {
		want, ok := wantCRDs[crd.Name]
		if !ok {
			t.Errorf("unexpected embedded CRD %q", crd.Name)
			continue
		}
		seen[crd.Name] = true
		t.Run(crd.Name, func(t *testing.T) { checkCRD(t, crd, want) })
	}
	for name := range wantCRDs {
		if !seen[name] {
			t.Errorf("CRD %q is not embedded", name)
		}
	}
}

func checkCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, want wantCRD) {
	t.Helper()
	if crd.Spec.Group != want.group || crd.Spec.Names.Kind != want.kind || crd.Spec.Scope != want.scope {
		t.Errorf("group/kind/scope = %s/%s/%s, want %s/%s/%s", crd.Spec.Group, crd.Spec.Names.Kind,
			crd.Spec.Scope, want.group, want.kind, want.scope)
	}
	if diff := cmp.Diff(want.shortNames, crd.Spec.Names.ShortNames); diff != "" {
		t.Errorf("short names (-want +got):\n%s", diff)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("got %d versions, want exactly %s", len(crd.Spec.Versions), want.version)
	}
	v := crd.Spec.Versions[0]
	if v.Name != want.version || !v.Served || !v.Storage {
		t.Errorf("version %s served=%t storage=%t, want %s served and stored", v.Name, v.Served, v.Storage, want.version)
	}
	gotStatus := v.Subresources != nil && v.Subresources.Status != nil
	if gotStatus != want.statusSubresource {
		t.Errorf("status subresource = %t, want %t", gotStatus, want.statusSubresource)
	}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		t.Fatalf("version %s has no schema", v.Name)
	}
	for _, path := range want.fields {
		if schemaAt(v.Schema.OpenAPIV3Schema, path) == nil {
			t.Errorf("schema has no field %s", path)
		}
	}
}

// schemaAt returns the schema of the property at a dotted path, or nil.
func schemaAt(s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	for _, name := range strings.Split(path, ".") {
		p, ok := s.Properties[name]
		if !ok {
			return nil
		}
		s = &p
	}
	return s
}

// TestCRDsPassAPIServerValidation runs the API server's own CRD validation, so that a
// CRD the sandbox or a cluster would reject (a bad printer column path, a non-structural
// schema, a bad default) fails here first.
func TestCRDsPassAPIServerValidation(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatalf("CRDs() error: %v", err)
	}
	for _, crd := range crds {
		t.Run(crd.Name, func(t *testing.T) {
			v1 := crd.DeepCopy()
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
			internal := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, internal, nil); err != nil {
				t.Fatalf("converting to the internal version: %v", err)
			}
			if errs := validation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
				t.Errorf("API server would reject the CRD:\n%v", errs.ToAggregate())
			}
		})
	}
}

func TestDecodeCRDRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"wrong kind", "apiVersion: apiextensions.k8s.io/v1\nkind: Pod\nmetadata: {name: x}\n",
			`found apiVersion "apiextensions.k8s.io/v1" kind "Pod"`},
		{"old apiVersion", "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: x}\n",
			`found apiVersion "apiextensions.k8s.io/v1beta1"`},
		{"unknown field", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {grup: x}\n",
			`unknown field "grup"`},
		{"no name", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n",
			"expected metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeCRD([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("decodeCRD error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
