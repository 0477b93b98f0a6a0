package kubefit

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	schedv1 "k8s.io/kube-scheduler/config/v1"
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

func pluginConfig(t *testing.T, name, args string) []schedv1.PluginConfig {
	t.Helper()
	return []schedv1.PluginConfig{{Name: name, Args: runtime.RawExtension{Raw: []byte(args)}}}
}

// TestPluginConfig: arguments kube-scheduler refuses are refused, naming the plugin and
// field; arguments that add rules to every pod make the Host judge every pod.
func TestPluginConfig(t *testing.T) {
	_, err := New(Options{PluginConfig: pluginConfig(t, "PodTopologySpread",
		`{"defaultingType":"List","defaultConstraints":[{"maxSkew":0,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]}`)})
	if err == nil || !strings.Contains(err.Error(), "maxSkew") {
		t.Fatalf("maxSkew 0: err %v, want it named", err)
	}
	_, err = New(Options{PluginConfig: pluginConfig(t, "NodeResourcesFit", `{"ignoredResources":["example.com/fpga"]}`)})
	if err == nil || !strings.Contains(err.Error(), "ignoredResources") {
		t.Fatalf("ignoredResources: err %v, want it refused", err)
	}
	h, err := New(Options{})
	if err != nil || h.Always() {
		t.Fatalf("defaults: err %v, always %v", err, h.Always())
	}
	h, err = New(Options{PluginConfig: pluginConfig(t, "NodeAffinity",
		`{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["ml"]}]}]}}}`)})
	if err != nil || !h.Always() {
		t.Fatalf("addedAffinity: err %v, always %v", err, h.Always())
	}
	plain := worker("plain")
	plain.Spec.Affinity = nil
	snap := cluster.New([]*corev1.Node{node("n1")}, nil)
	c, err := h.Begin(snap, plain)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Filter(snap.Node("n1")); v.OK() || v.Plugin != "NodeAffinity" {
		t.Fatalf("node without pool=ml under addedAffinity: %+v", v)
	}
}
