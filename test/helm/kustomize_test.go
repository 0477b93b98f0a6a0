package helm

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of a Kustomization deploy/ uses: a list of resources. The
// test refuses any other field, so that reading the files stays what kustomize builds.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// kustomizeObjects returns the objects deploy/kustomization.yaml lists.
func kustomizeObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(root, "deploy")
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("deploy/kustomization.yaml uses more than resources (teach this test): %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		o, err := decode(t, data)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		objs = append(objs, o...)
	}
	return objs
}

// TestMatchesKustomize checks that the chart with its default values and the
// kustomization install the same objects with the same substance; labels, selectors
// and the Namespace (helm install --create-namespace makes it) aside.
func TestMatchesKustomize(t *testing.T) {
	chart := mustRender(t)
	kust := byKey(kustomizeObjects(t))
	delete(kust, "Namespace//muster-system")
	if diff := cmp.Diff(keys(kust), keys(chart)); diff != "" {
		t.Errorf("objects (-kustomize +helm):\n%s", diff)
	}
	for k, want := range kust {
		got := chart[k]
		if got == nil {
			continue
		}
		if diff := cmp.Diff(substance(t, want), substance(t, got)); diff != "" {
			t.Errorf("%s (-kustomize +helm):\n%s", k, diff)
		}
	}
}

// TestChartFilesAreCopies checks that the chart's copies of the CRDs and the
// ClusterRole are the files deploy/ holds (hack/generate.sh copies them).
func TestChartFilesAreCopies(t *testing.T) {
	for _, f := range []string{"crd/muster.dev_queues.yaml", "crd/scheduling.x-k8s.io_podgroups.yaml",
		"crd/scheduling.volcano.sh_podgroups.yaml", "rbac/cluster_role.yaml", "rbac/role.yaml", "rbac/user_roles.yaml",
		"policies/group_settings.yaml", "policies/queue_invariants.yaml"} {
		want, err := os.ReadFile(filepath.Join(root, "deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "deploy", "helm", "muster", "files", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("deploy/helm/muster/files/%s differs from deploy/%s: run hack/generate.sh", f, f)
		}
	}
}

// keys returns the sorted keys of m.
func keys(m map[string]*unstructured.Unstructured) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// substance is what an object does, without its metadata and selectors: what the two
// installs must agree on. A ConfigMap's Configuration is compared parsed.
func substance(t *testing.T, o *unstructured.Unstructured) any {
	t.Helper()
	c := o.DeepCopy().Object
	delete(c, "metadata")
	switch o.GetKind() {
	case "Deployment":
		unstructured.RemoveNestedField(c, "spec", "selector")
		unstructured.RemoveNestedField(c, "spec", "template", "metadata")
	case "Service", "PodDisruptionBudget":
		unstructured.RemoveNestedField(c, "spec", "selector")
	case "ConfigMap":
		return configuration(t, o)
	}
	return c
}
