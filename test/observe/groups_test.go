package observe

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

var podGroups = spv1alpha1.GroupVersion.WithResource("podgroups")

// namespace creates a namespace with a fixed name, so that golden files can name it; each
// test package run starts a fresh sandbox, so names never collide.
func namespace(t *testing.T, env *sandboxtest.Env, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = env.Kube.CoreV1().Pods(name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	return name
}

// podGroup creates a scheduler-plugins PodGroup as training-operator does.
func podGroup(t *testing.T, env *sandboxtest.Env, ns, name string, minMember int32, annotations map[string]string, owner *metav1.OwnerReference) {
	t.Helper()
	pg := &spv1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: spv1alpha1.GroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec:       spv1alpha1.PodGroupSpec{MinMember: minMember},
	}
	if owner != nil {
		pg.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.Dynamic.Resource(podGroups).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating PodGroup %s/%s: %v", ns, name, err)
	}
}

// member builds a pod of muster's in group (scheduler-plugins label), with gpus GPUs.
func member(ns, group string, i int, gpus int64) *sandboxtest.PodBuilder {
	b := sandboxtest.Pod(ns, fmt.Sprintf("%s-worker-%d", group, i)).GPUs(gpus).SchedulerName("muster")
	return b
}

// createMembers creates count members of group, each labelled and optionally annotated.
func createMembers(t *testing.T, env *sandboxtest.Env, ns, group string, count int, gpus int64, annotate func(i int, b *sandboxtest.PodBuilder)) {
	t.Helper()
	for i := 0; i < count; i++ {
		b := member(ns, group, i, gpus)
		if annotate != nil {
			annotate(i, b)
		}
		p := b.Obj()
		p.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: group}
		env.CreatePod(t, p)
	}
}
