package explain

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

// parent returns a workload object of kind with uid.
func parent(apiVersion, kind, name string, uid types.UID, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetNamespace("default")
	u.SetUID(uid)
	return u
}

// pod returns a pod controlled by owner (if set), with labels.
func pod(name string, owner *unstructured.Unstructured, labels map[string]string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(),
			Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
	}
	return p
}

func TestGroupOfParent(t *testing.T) {
	job := parent("batch/v1", "Job", "train", "uid-job", nil)
	js := parent("jobset.x-k8s.io/v1alpha2", "JobSet", "llama", "uid-js", nil)
	child := parent("batch/v1", "Job", "llama-node-0", "uid-child", nil)
	plain := func(g string) map[string]string { return map[string]string{musterv1alpha1.GroupLabel: g} }
	tests := []struct {
		name   string
		parent *unstructured.Unstructured
		pods   []corev1.Pod
		want   source.Ref
		ok     bool
	}{
		{"the group most pods join", job, []corev1.Pod{
			pod("train-0", job, plain("b")), pod("train-1", job, plain("a")), pod("train-2", job, plain("a")),
			pod("other", nil, plain("b")), pod("other-2", nil, plain("b")),
		}, source.Ref{Source: engine.Labels, Namespace: "default", Name: "a"}, true},
		{"a tie goes to the first key", job, []corev1.Pod{
			pod("train-0", job, plain("b")), pod("train-1", job, plain("a")),
		}, source.Ref{Source: engine.Labels, Namespace: "default", Name: "a"}, true},
		{"pods that join no group", job, []corev1.Pod{pod("train-0", job, nil)}, source.Ref{}, false},
		{"a JobSet's pods, through its Jobs", js, []corev1.Pod{
			pod("llama-node-0-0", child, map[string]string{jobSetNameLabel: "llama", musterv1alpha1.CoschedulingPodGroupLabel: "llama-pg"}),
		}, source.Ref{Source: engine.Coscheduling, Namespace: "default", Name: "llama-pg"}, true},
		{"another JobSet's pods", js, []corev1.Pod{
			pod("other-0", child, map[string]string{jobSetNameLabel: "other", musterv1alpha1.GroupLabel: "x"}),
		}, source.Ref{}, false},
	}
	for _, tc := range tests {
		got, ok := groupOfParent(tc.parent, tc.pods)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: expected %v %v, found %v %v", tc.name, tc.want, tc.ok, got, ok)
		}
	}
}

func TestGroupOfTemplate(t *testing.T) {
	template := func(labels map[string]any) map[string]any {
		return map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": labels}}}
	}
	tests := []struct {
		name   string
		parent *unstructured.Unstructured
		want   source.Ref
		ok     bool
	}{
		{"a batch Job's plain group", parent("batch/v1", "Job", "sweep", "u1", template(map[string]any{musterv1alpha1.GroupLabel: "sweep-gang"})),
			source.Ref{Source: engine.Labels, Namespace: "default", Name: "sweep-gang"}, true},
		{"a template that joins no group", parent("batch/v1", "Job", "sweep", "u1", template(map[string]any{"app": "x"})), source.Ref{}, false},
		{"not a batch Job", parent("kubeflow.org/v1", "PyTorchJob", "bert", "u2", template(map[string]any{musterv1alpha1.GroupLabel: "x"})), source.Ref{}, false},
	}
	for _, tc := range tests {
		got, ok := groupOfTemplate(tc.parent)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("%s: expected %v %v, found %v %v", tc.name, tc.want, tc.ok, got, ok)
		}
	}
}
