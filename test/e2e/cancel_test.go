package e2e

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestCancellation: a queued group and a running group are deleted with their pods;
// nothing stays held and the next group is admitted.
func TestCancellation(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "cancel", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	running := pytorchJob{ns: ns, name: "running", workers: 3}
	running.create(t, env, c)
	env.WaitFor(t, "the first job to hold all 4 GPUs", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "running").holding == 4, nil
	})
	queued := pytorchJob{ns: ns, name: "queued", workers: 3}
	queued.create(t, env, c)
	waitCondition(t, env, c, ns, "queued", "Unschedulable", metav1.ConditionTrue)
	deleteJob(t, env, c, ns, "queued")
	next := pytorchJob{ns: ns, name: "next", workers: 3}
	next.create(t, env, c)
	deleteJob(t, env, c, ns, "running")
	env.WaitFor(t, "the next job to hold all 4 GPUs", func(context.Context) (bool, error) {
		if s := stateOf(t, env, ns, "queued"); s.holding > 0 {
			t.Fatalf("the cancelled queued job holds %d pods", s.holding)
		}
		return stateOf(t, env, ns, "next").holding == 4, nil
	})
}

// deleteJob deletes a job's PodGroup and pods, as its controller does on cancellation.
func deleteJob(t *testing.T, env *sandboxtest.Env, c client.Client, ns, name string) {
	t.Helper()
	ctx := context.Background()
	pg := &spv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Delete(ctx, pg); err != nil {
		t.Fatalf("deleting PodGroup %s: %v", name, err)
	}
	err := env.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
		LabelSelector: musterv1alpha1.CoschedulingPodGroupLabel + "=" + name,
	})
	if err != nil {
		t.Fatalf("deleting the pods of %s: %v", name, err)
	}
}
