package kubefit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-sched/muster/internal/cluster"
)

func node(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func worker(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"job": "a"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"job": "a"}},
					TopologyKey:   corev1.LabelHostname,
				}},
			}},
		},
	}
}

func TestAntiAffinitySeesAssumedMembers(t *testing.T) {
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap := cluster.New([]*corev1.Node{node("n1"), node("n2")}, nil)
	w0, w1 := worker("w0"), worker("w1")
	c, err := h.Begin(snap, w0)
	if err != nil {
		t.Fatal(err)
	}
	n1 := snap.Node("n1")
	if v := c.Filter(n1); !v.OK() {
		t.Fatalf("empty n1 rejected: %+v", v)
	}
	snap.AssumePod(n1, "ml/w0", w0, cluster.PodRequests(w0))
	if err := c.Added(w0, n1); err != nil {
		t.Fatal(err)
	}
	v := c.Filter(n1)
	if v.OK() || v.Plugin != "InterPodAffinity" {
		t.Fatalf("n1 with w0 on it: %+v", v)
	}
	t.Logf("n1: %+v", v)
	if v := c.Filter(snap.Node("n2")); !v.OK() {
		t.Fatalf("n2 rejected: %+v", v)
	}
	_ = w1
}
