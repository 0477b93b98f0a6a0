package e2e

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestExplainResolvesOwnerVersionsThroughDiscovery: the cluster serves MPIJob at
// training-operator's kubeflow.org/v1 only (not mpi-operator's v2beta1, which explain
// used to assume), and no TFJob. explain reads the MPIJob at v1, found through the API
// server's discovery, and says the cluster does not serve TFJob, naming it.
func TestExplainResolvesOwnerVersionsThroughDiscovery(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	installSchemalessCRD(t, env, "MPIJob", "mpijobs", "v1")
	gvr := schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "mpijobs"}
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "MPIJob",
		"metadata": map[string]any{"name": "pi", "namespace": ns},
		"spec": map[string]any{"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(2)}}},
	}}
	if _, err := env.Dynamic.Resource(gvr).Namespace(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating MPIJob pi: %v", err)
	}
	c := explain.NewClients(env.Kube, env.Dynamic)
	f, err := explain.Gather(context.Background(), c, "mpijob/pi", ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if f.Parent == nil || f.Parent.GetAPIVersion() != "kubeflow.org/v1" || f.ParentProblem != "" {
		t.Errorf("mpijob/pi: parent %v, problem %q; expected MPIJob pi read at kubeflow.org/v1", f.Parent, f.ParentProblem)
	}
	f, err = explain.Gather(context.Background(), c, "tfjob/bert", ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const want = "the cluster does not serve kind TFJob (kubeflow.org, versions v1)"
	if !f.ParentUnserved || f.ParentProblem != want {
		t.Errorf("tfjob/bert: unserved %v, problem %q; expected true, %q", f.ParentUnserved, f.ParentProblem, want)
	}
	if v := explain.Build(f).Verdict; v.Step != 1 || v.Summary != want {
		t.Errorf("tfjob/bert: verdict %+v; expected step 1: %s", v, want)
	}
}

// installSchemalessCRD serves kind of kubeflow.org at versions (the first stored),
// schemaless, until the test ends.
func installSchemalessCRD(t *testing.T, env *sandboxtest.Env, kind, plural string, versions ...string) {
	t.Helper()
	crd := env.InstallCRD(t, "kubeflow.org", kind, plural, versions...)
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the %s CRD: %v", kind, err)
		}
	})
}
