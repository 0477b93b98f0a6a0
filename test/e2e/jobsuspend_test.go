package e2e

import (
	"context"
	"net/http"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// suspensionPath is the path of muster's patches of Job ns/name, and suspendBody what
// the one that suspends it holds.
func suspensionPath(ns, name string) string {
	return "/apis/batch/v1/namespaces/" + ns + "/jobs/" + name
}

const suspendBody = `"suspend":true`

// startJobToSuspend starts muster through a proxy that hook intercepts, and a batch Job
// name whose two one-GPU workers are never Ready in time, on two nodes of one GPU: muster
// evicts its group at its 2 s start timeout by suspending the Job. Its backoff is five
// minutes, so that a suspended Job stays suspended while the test looks. It returns the
// Job's first two pods, by UID.
func startJobToSuspend(t *testing.T, env *sandboxtest.Env, ns, name string, hook sandboxtest.Hook) map[types.UID]string {
	t.Helper()
	env.CreateNodes(t, sandbox.NodePool{Name: name, Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	proxy := env.StartProxy(t)
	proxy.SetHook(hook)
	startMuster(t, env, musterOptions{proxy: proxy})
	if _, err := env.Kube.BatchV1().Jobs(ns).Create(context.Background(), trainingJob(ns, name, "5m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := map[types.UID]string{}
	env.WaitFor(t, "the two pods of Job "+name, func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
		if err != nil {
			return false, err
		}
		clear(first)
		for _, p := range pods.Items {
			first[p.UID] = p.Name
		}
		return len(first) == 2, nil
	})
	return first
}

// TestHeldJobSuspensionDoesNotHoldTheQueue: the API server holds muster's patch that
// suspends a batch Job to evict its group; meanwhile muster binds another pod. Released,
// the patch suspends the Job, with muster's annotation and the group's record.
func TestHeldJobSuspensionDoesNotHoldTheQueue(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	h := newHeldRequest(http.MethodPatch, suspensionPath(ns, "held"), suspendBody)
	startJobToSuspend(t, env, ns, "held", h.hook)
	boundWhileHeld(t, env, ns, h, "its suspension of Job held")
	close(h.release)
	t.Logf("the held suspension, released: %d", <-h.answer)
	rec := waitJobRecord(t, env, ns, "held", "Backoff", nil)
	if rec.Failures != 1 {
		t.Errorf("Job held: expected its group's record to count 1 failed attempt, found %d", rec.Failures)
	}
}

// TestRefusedJobSuspensionDeletesThePods: the API server answers muster's patch that
// suspends a batch Job with 500. muster evicts the group by deleting its pods instead:
// the Job's first pods go, and the Job is not suspended.
func TestRefusedJobSuspensionDeletesThePods(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	hook, refused := refuseFirst(http.MethodPatch, suspensionPath(ns, "refused"), suspendBody)
	first := startJobToSuspend(t, env, ns, "refused", hook)
	env.WaitFor(t, "the first pods of Job refused deleted", func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=refused"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if _, old := first[p.UID]; old && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if n := refused.Load(); n != 1 {
		t.Errorf("expected muster to send one suspension, refused; it sent %d", n)
	}
	j, err := env.Kube.BatchV1().Jobs(ns).Get(context.Background(), "refused", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if (j.Spec.Suspend != nil && *j.Spec.Suspend) || j.Annotations[musterv1alpha1.SuspendedAnnotation] != "" {
		t.Errorf("Job refused: expected it not suspended, found suspend %v, annotations %v", j.Spec.Suspend, j.Annotations)
	}
}
