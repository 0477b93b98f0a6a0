package explain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// served is a Reader over a handful of objects, whose kinds are resolved by a
// RESTMapper that knows the served versions only (as discovery would list them).
type served struct {
	mapper  *meta.DefaultRESTMapper
	objects map[schema.GroupVersionResource]*unstructured.Unstructured
	asked   []schema.GroupVersionResource
}

func newServed(kinds ...schema.GroupVersionKind) *served {
	var gvs []schema.GroupVersion
	for _, k := range kinds {
		gvs = append(gvs, k.GroupVersion())
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, k := range kinds {
		m.Add(k, meta.RESTScopeNamespace)
	}
	return &served{mapper: m, objects: map[schema.GroupVersionResource]*unstructured.Unstructured{}}
}

func (s *served) Pods(context.Context, string) ([]corev1.Pod, error)     { return nil, nil }
func (s *served) Nodes(context.Context) ([]corev1.Node, error)           { return nil, nil }
func (s *served) Events(context.Context, string) ([]corev1.Event, error) { return nil, nil }

func (s *served) Object(_ context.Context, gvr schema.GroupVersionResource, _, name string) (*unstructured.Unstructured, error) {
	s.asked = append(s.asked, gvr)
	if u, ok := s.objects[gvr]; ok && u.GetName() == name {
		return u, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (s *served) Resource(gk schema.GroupKind, versions ...string) (schema.GroupVersionResource, error) {
	return resourceOf(s.mapper, gk, versions...)
}

var (
	mpiV1      = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "MPIJob"}
	mpiV2beta1 = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"}
)

// TestParentVersionFromDiscovery reads an MPIJob at the version the cluster serves:
// training-operator's v1, or mpi-operator's v2beta1 when both are served.
func TestParentVersionFromDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name   string
		served []schema.GroupVersionKind
		want   string
	}{
		{"training-operator only", []schema.GroupVersionKind{mpiV1}, "v1"},
		{"mpi-operator only", []schema.GroupVersionKind{mpiV2beta1}, "v2beta1"},
		{"both", []schema.GroupVersionKind{mpiV1, mpiV2beta1}, "v2beta1"},
	} {
		r := newServed(tc.served...)
		gvr := schema.GroupVersionResource{Group: "kubeflow.org", Version: tc.want, Resource: "mpijobs"}
		r.objects[gvr] = parent("kubeflow.org/"+tc.want, "MPIJob", "pi", "uid-pi", map[string]any{
			"mpiReplicaSpecs": map[string]any{"Launcher": map[string]any{}}})
		f, err := Gather(context.Background(), r, "mpijob/pi", "default", []string{"muster"}, time.Unix(0, 0))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if f.Parent == nil || f.ParentProblem != "" {
			t.Errorf("%s: parent %v, problem %q; expected MPIJob pi at %s (asked %v)", tc.name, f.Parent, f.ParentProblem, tc.want, r.asked)
		}
	}
}

func TestParentKindNotServed(t *testing.T) {
	r := newServed(mpiV1)
	f, err := Gather(context.Background(), r, "pytorchjob/bert", "default", []string{"muster"}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := "the cluster does not serve kind PyTorchJob (kubeflow.org, versions v1)"
	if f.ParentProblem != want || !f.ParentUnserved || len(r.asked) != 0 {
		t.Errorf("problem %q, unserved %v, objects read %v; expected %q, true, none", f.ParentProblem, f.ParentUnserved, r.asked, want)
	}
	v := Build(f).Verdict
	if v.Step != 1 || v.Summary != want || !strings.Contains(v.Fix, "install the operator that serves pytorchjob") {
		t.Errorf("verdict %+v; expected step 1 naming the kind, with the fix to install its operator", v)
	}
}

func TestCacheReaderWithoutMapper(t *testing.T) {
	_, err := NewCacheReader(nil, nil).Resource(schema.GroupKind{Group: "batch", Kind: "Job"})
	if err == nil || !strings.Contains(err.Error(), "Job.batch") {
		t.Errorf("error %v; expected one naming kind Job.batch", err)
	}
}

func TestUnknownKindIsUsage(t *testing.T) {
	_, err := Gather(context.Background(), newServed(), "deployment/web", "default", []string{"muster"}, time.Unix(0, 0))
	want := `usage: kind "deployment": expected one of pytorchjob, tfjob, mpijob, xgboostjob, paddlejob, jaxjob, job, jobset, raycluster, podgroup, or a plain group name`
	if !errors.Is(err, ErrUsage) || err.Error() != want {
		t.Errorf("error %v; expected %q", err, want)
	}
}

func TestGatherWithoutSchedulerNames(t *testing.T) {
	for _, names := range [][]string{nil, {"muster", ""}} {
		_, err := Gather(context.Background(), newServed(), "podgroup/bert", "default", names, time.Unix(0, 0))
		if want := fmt.Sprintf("schedulerNames: %q: expected muster's schedulerName", names); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Gather with schedulerNames %q: error %v; expected one containing %q", names, err, want)
		}
	}
}
