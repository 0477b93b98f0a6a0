package source

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// gangOf returns an object of api with a gang of minMember, filled in through the
// object the registry constructs.
func gangOf(t *testing.T, api *GroupAPI, minMember int32) Object {
	t.Helper()
	obj := api.New()
	obj.SetNamespace(testNamespace)
	obj.SetName("bert")
	switch o := obj.(type) {
	case *spv1alpha1.PodGroup:
		o.Spec.MinMember = minMember
	case *volcanov1beta1.PodGroup:
		o.Spec.MinMember = minMember
	case *schedulingv1beta1.PodGroup:
		o.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minMember}
	default:
		t.Fatalf("%s: New returned %T: no fixture for it", api.Name(), obj)
	}
	return obj
}

// written returns u as it is after w is applied to it: the annotations merged, and
// the status merge-patched (through JSON, as the API server reads it).
func written(t *testing.T, u *unstructured.Unstructured, w StatusWrite) *unstructured.Unstructured {
	t.Helper()
	out := u.DeepCopy()
	annotations := out.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	for k, v := range w.Annotations {
		annotations[k] = v
	}
	out.SetAnnotations(annotations)
	if w.Status != nil {
		data, err := json.Marshal(w.Status)
		if err != nil {
			t.Fatal(err)
		}
		var status map[string]any
		if err := json.Unmarshal(data, &status); err != nil {
			t.Fatal(err)
		}
		prev, _, _ := unstructured.NestedMap(out.Object, "status")
		if prev == nil {
			prev = map[string]any{}
		}
		for k, v := range status {
			prev[k] = v
		}
		if err := unstructured.SetNestedMap(out.Object, prev, "status"); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestGroupAPIsRoundTrip constructs an object of each API, reads it back as the
// dynamic client returns it, translates it, writes a status and reads the conditions
// back.
func TestGroupAPIsRoundTrip(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	conds := []metav1.Condition{
		{Type: "Admitted", Status: metav1.ConditionTrue, Reason: "Placed", Message: "all 4 members placed", LastTransitionTime: at},
		{Type: "PodsReady", Status: metav1.ConditionFalse, Reason: "Starting", Message: "0 of 4 ready", LastTransitionTime: at},
	}
	wantWhere := map[engine.Source]struct {
		annotation, subresource bool
		status                  []string
	}{
		engine.Coscheduling: {annotation: true, subresource: true, status: []string{"phase"}},
		engine.Volcano:      {status: []string{"conditions"}},
		engine.Native:       {subresource: true, status: []string{"conditions"}},
	}
	apis := GroupAPIs()
	if len(apis) != len(wantWhere) {
		t.Fatalf("expected %d group APIs, found %d", len(wantWhere), len(apis))
	}
	for i := range apis {
		api := &apis[i]
		t.Run(string(api.Source), func(t *testing.T) {
			if got := APIOf(api.Source); got == nil || got.Resource != api.Resource {
				t.Fatalf("APIOf(%s) = %v, expected the API of %s", api.Source, got, api.Resource)
			}
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gangOf(t, api, 4))
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: raw}
			u.SetGroupVersionKind(api.GroupVersionKind())
			obj, err := api.Decode(u)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			spec, gang := api.Translate(obj, nil, nil)
			want := Ref{Source: api.Source, Namespace: testNamespace, Name: "bert"}.Key()
			if !gang || spec.Key != want || spec.MinMember != 4 || len(spec.Invalid) > 0 {
				t.Errorf("Translate = key %q, minMember %d, gang %v, invalid %q; expected %q, 4, true, none",
					spec.Key, spec.MinMember, gang, spec.Invalid, want)
			}
			w := api.StatusOut(conds, lifecycle.Starting, "")
			where := wantWhere[api.Source]
			_, annotated := w.Annotations[StatusAnnotation]
			var fields []string
			for k := range w.Status {
				fields = append(fields, k)
			}
			if annotated != where.annotation || w.Subresource != where.subresource || !cmp.Equal(fields, where.status) {
				t.Errorf("StatusOut writes annotation %v, subresource %v, status %v; expected %v, %v, %v",
					annotated, w.Subresource, fields, where.annotation, where.subresource, where.status)
			}
			if w.Subresource != api.StatusSubresource {
				t.Errorf("StatusOut writes through the status subresource: %v, but StatusSubresource is %v", w.Subresource, api.StatusSubresource)
			}
			back := written(t, u, w)
			if diff := cmp.Diff(conds, api.Conditions(back)); diff != "" {
				t.Errorf("conditions read back (-want +got):\n%s", diff)
			}
			if _, err := api.Decode(back); err != nil {
				t.Errorf("the object as written does not decode: %v", err)
			}
		})
	}
}

func TestCoschedulingPhaseWrittenWhenItMoves(t *testing.T) {
	api := APIOf(engine.Coscheduling)
	w := api.StatusOut(nil, lifecycle.Running, "")
	if w.Phase != string(spv1alpha1.PodGroupRunning) || w.Status["phase"] != spv1alpha1.PodGroupRunning {
		t.Errorf("first write: phase %q, status %v; expected Running in both", w.Phase, w.Status)
	}
	if w = api.StatusOut(nil, lifecycle.Recovering, w.Phase); w.Status != nil || w.Phase != string(spv1alpha1.PodGroupRunning) {
		t.Errorf("Recovering after Running: status %v, phase %q; expected no status patch, phase Running", w.Status, w.Phase)
	}
	if w = api.StatusOut(nil, lifecycle.Failed, w.Phase); w.Status["phase"] != spv1alpha1.PodGroupFailed {
		t.Errorf("Failed after Running: status %v; expected phase Failed", w.Status)
	}
}

func TestNativeBasicIsNoGang(t *testing.T) {
	api := APIOf(engine.Native)
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "solo"}}
	pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	spec, gang := api.Translate(pg, nil, nil)
	if gang || spec.MinMember != 1 || len(spec.Invalid) > 0 {
		t.Errorf("basic policy: gang %v, minMember %d, invalid %q; expected false, 1, none", gang, spec.MinMember, spec.Invalid)
	}
}

func TestTranslateOfAnotherType(t *testing.T) {
	pg := &volcanov1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "x"}}
	spec, _ := APIOf(engine.Native).Translate(pg, nil, nil)
	want := "object: *v1beta1.PodGroup: expected a scheduling.k8s.io/v1beta1 PodGroup"
	if len(spec.Invalid) != 1 || spec.Invalid[0] != want {
		t.Errorf("Invalid = %q, expected [%q]", spec.Invalid, want)
	}
	if _, err := APIOf(engine.Native).Decode(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": map[string]any{"name": "x"}}}); err == nil ||
		!strings.Contains(err.Error(), "expected a scheduling.k8s.io/v1beta1 PodGroup") {
		t.Errorf("Decode of a Volcano PodGroup as Native: error %v, expected one naming the API", err)
	}
}

func TestConditionsOfATenantsEdit(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{StatusAnnotation: "not json"}}, "status": map[string]any{"conditions": "yes"}}}
	for _, api := range GroupAPIs() {
		if got := api.Conditions(u); got != nil {
			t.Errorf("%s: conditions %v from malformed fields, expected none", api.Name(), got)
		}
	}
}

func TestOwnerKinds(t *testing.T) {
	seen := map[schema.GroupKind]bool{}
	for _, k := range OwnerKinds() {
		if seen[k.GroupKind] {
			t.Errorf("%s listed twice", k.GroupKind)
		}
		seen[k.GroupKind] = true
		if k.Name != strings.ToLower(k.GroupKind.Kind) || len(k.Versions) == 0 {
			t.Errorf("%s: name %q, versions %v; expected %q and at least one version", k.GroupKind, k.Name, k.Versions, strings.ToLower(k.GroupKind.Kind))
		}
		if got := OwnerKindNamed(k.Name); got == nil || got.GroupKind != k.GroupKind {
			t.Errorf("OwnerKindNamed(%q) = %v, expected %s", k.Name, got, k.GroupKind)
		}
		if got := OwnerKindOf(k.GroupKind); got == nil || got.Name != k.Name {
			t.Errorf("OwnerKindOf(%s) = %v, expected %q", k.GroupKind, got, k.Name)
		}
	}
	if OwnerKindOf(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}) != nil || OwnerKindNamed("podgroup") != nil {
		t.Error("a ReplicaSet or the name podgroup resolves to an owner kind")
	}
	if got := strings.Join(OwnerKindNames(), ","); got != "pytorchjob,tfjob,mpijob,xgboostjob,paddlejob,jaxjob,job,jobset,raycluster" {
		t.Errorf("OwnerKindNames = %s", got)
	}
}

// TestMPIJobVersions reads one MPIJob spec at both versions the registry knows: only
// mpi-operator's v2beta1 defaults Worker replicas to 0.
func TestMPIJobVersions(t *testing.T) {
	spec := map[string]any{"mpiReplicaSpecs": map[string]any{"Launcher": map[string]any{}, "Worker": map[string]any{}}}
	for version, want := range map[string]int{"v2beta1": 1, "v1": 2} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/" + version, "kind": "MPIJob",
			"metadata": map[string]any{"name": "pi"}, "spec": spec}}
		if n, err := OwnerReplicas(u); err != nil || n != want {
			t.Errorf("MPIJob %s: %d replicas, error %v; expected %d", version, n, err, want)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v9", "kind": "MPIJob", "metadata": map[string]any{"name": "pi"}}}
	if _, err := OwnerReplicas(u); err == nil || !strings.Contains(err.Error(), "unknown owner kind MPIJob of kubeflow.org/v9") {
		t.Errorf("MPIJob v9: error %v, expected one naming the unknown version", err)
	}
}
