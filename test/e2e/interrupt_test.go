package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// setNodeDown marks a node down (or up) with the sandbox annotation; the simulated
// kubelet turns it NotReady and fails its pods.
func setNodeDown(t *testing.T, env *sandboxtest.Env, name string, down bool) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if down {
			metav1.SetMetaDataAnnotation(&n.ObjectMeta, kubelet.AnnotationDown, "true")
		} else {
			delete(n.Annotations, kubelet.AnnotationDown)
		}
		_, err = env.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("marking node %s down=%t: %v", name, down, err)
	}
}

// getPod reads a pod.
func getPod(t *testing.T, env *sandboxtest.Env, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod %s/%s: %v", ns, name, err)
	}
	return p
}

// TestNodeDownRecoversOnASpare: a running group of plain pods loses a member with its
// node; muster creates the failed member again (no controller owns it), places it
// alone on the spare node, and the group runs again without being evicted.
func TestNodeDownRecoversOnASpare(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "spare", Count: 3, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	job := pytorchJob{ns: ns, name: "lose", workers: 1, plain: true, groupAnnotations: map[string]string{
		musterv1alpha1.RecoveryTimeoutAnnotation: "2m",
	}}
	job.create(t, env, c)
	waitCondition(t, env, c, ns, "lose", "PodsReady", metav1.ConditionTrue)
	master, worker := getPod(t, env, ns, "lose-master-0"), getPod(t, env, ns, "lose-worker-0")
	setNodeDown(t, env, worker.Spec.NodeName, true)
	// PodsReady is False only until the new worker is Ready, which can be sooner than
	// a status write: the recovery is checked by the reason PodsReady is True again for.
	env.WaitFor(t, "the worker created again, on another node, and Ready", func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "lose-worker-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil // between muster's delete and its create
		}
		return err == nil && p.UID != worker.UID && sandboxtest.PodReady(p), err
	})
	if p := getPod(t, env, ns, "lose-worker-0"); p.Spec.NodeName == worker.Spec.NodeName {
		t.Errorf("expected the new worker off the down node %s, found it there", worker.Spec.NodeName)
	}
	env.WaitFor(t, "PodsReady True again, Recovered", func(context.Context) (bool, error) {
		ready, _ := groupCondition(t, c, ns, "lose", "PodsReady")
		return ready.Status == metav1.ConditionTrue && ready.Reason == lifecycle.ReasonRecovered, nil
	})
	if p := getPod(t, env, ns, "lose-master-0"); p.UID != master.UID {
		t.Errorf("expected the master to survive the recovery, found it replaced")
	}
	if cond, _ := groupCondition(t, c, ns, "lose", "Evicted"); cond.Status == metav1.ConditionTrue {
		t.Errorf("expected no eviction of the recovered group, found %s: %s", cond.Reason, cond.Message)
	}
}

// TestNodeDownWithoutSpareEvictsTheGroup: with no spare node, the group stays below its
// minimum; after its recovery-timeout the whole group is evicted and requeued, holding
// nothing while it waits, and runs again once the node is back.
func TestNodeDownWithoutSpareEvictsTheGroup(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "nospare", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	job := pytorchJob{ns: ns, name: "stuck", workers: 1, plain: true, groupAnnotations: map[string]string{
		musterv1alpha1.RecoveryTimeoutAnnotation: "3s",
		musterv1alpha1.BackoffBaseAnnotation:     "1s",
		musterv1alpha1.MaxRetriesAnnotation:      "5",
	}}
	job.create(t, env, c)
	waitCondition(t, env, c, ns, "stuck", "PodsReady", metav1.ConditionTrue)
	master := getPod(t, env, ns, "stuck-master-0")
	worker := getPod(t, env, ns, "stuck-worker-0")
	setNodeDown(t, env, worker.Spec.NodeName, true)
	evicted := waitCondition(t, env, c, ns, "stuck", "Evicted", metav1.ConditionTrue)
	if evicted.Reason != "RecoveryTimeout" {
		t.Errorf("Evicted reason: expected RecoveryTimeout, found %s: %s", evicted.Reason, evicted.Message)
	}
	// Requeued after the backoff: Unschedulable, or Impossible while the only node
	// left cannot hold both members.
	waitCondition(t, env, c, ns, "stuck", "Evicted", metav1.ConditionFalse)
	if admitted, _ := groupCondition(t, c, ns, "stuck", "Admitted"); admitted.Status != metav1.ConditionFalse {
		t.Errorf("expected the requeued group not admitted, found %s: %s", admitted.Reason, admitted.Message)
	} else {
		t.Logf("requeued: %s: %s", admitted.Reason, admitted.Message)
	}
	if s := stateOf(t, env, ns, "stuck"); s.holding != 0 {
		t.Errorf("expected the requeued group to hold nothing, found %d pods bound", s.holding)
	}
	if p := getPod(t, env, ns, "stuck-master-0"); p.UID == master.UID {
		t.Errorf("expected the surviving master evicted with its group, found it still running")
	}
	setNodeDown(t, env, worker.Spec.NodeName, false)
	waitCondition(t, env, c, ns, "stuck", "PodsReady", metav1.ConditionTrue)
}
