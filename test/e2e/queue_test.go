package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// createQueue creates a Queue with a GPU quota and selector (nil: an empty selector, which
// admits every namespace), named after the test's namespace, changed by mutate, and
// deletes it when the test ends.
func createQueue(t *testing.T, c client.Client, name string, gpus int64, sel *metav1.LabelSelector,
	mutate ...func(*musterv1alpha1.Queue)) *musterv1alpha1.Queue {
	t.Helper()
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	q := &musterv1alpha1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: musterv1alpha1.QueueSpec{
			Quota:             corev1.ResourceList{sandbox.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
			NamespaceSelector: sel,
		},
	}
	for _, f := range mutate {
		f(q)
	}
	if err := c.Create(context.Background(), q); err != nil {
		t.Fatalf("creating Queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), q); err != nil {
			t.Errorf("deleting Queue %s: %v", name, err)
		}
	})
	return q
}

// wantQueueStatus waits until a Queue's status shows admitted and pending groups
// holding gpus GPUs.
func wantQueueStatus(t *testing.T, env *sandboxtest.Env, c client.Client, name string, admitted, pending int32, gpus int64) {
	t.Helper()
	var last musterv1alpha1.QueueStatus
	what := fmt.Sprintf("Queue %s status: %d admitted, %d pending, %d GPUs used", name, admitted, pending, gpus)
	env.WaitFor(t, what, func(ctx context.Context) (bool, error) {
		q := &musterv1alpha1.Queue{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, q); err != nil {
			return false, fmt.Errorf("reading Queue %s: %w", name, err)
		}
		last = q.Status
		used := q.Status.Used[sandbox.ResourceGPU]
		return q.Status.AdmittedGroups == admitted && q.Status.PendingGroups == pending && used.Value() == gpus, nil
	})
	t.Logf("Queue %s status: %+v", name, last)
}

// wantWeightedShare waits until a Queue's status.weightedShare is its used resources'
// dominant share of the nodes' allocatable, per unit of weight, in thousandths, and is
// not zero.
func wantWeightedShare(t *testing.T, env *sandboxtest.Env, c client.Client, name string) {
	t.Helper()
	var want, found int64
	env.WaitFor(t, "Queue "+name+" status.weightedShare", func(ctx context.Context) (bool, error) {
		q := &musterv1alpha1.Queue{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, q); err != nil {
			return false, fmt.Errorf("reading Queue %s: %w", name, err)
		}
		nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing nodes: %w", err)
		}
		capacity := cluster.Resources{}
		for i := range nodes.Items {
			capacity.Add(cluster.FromList(nodes.Items[i].Status.Allocatable))
		}
		want = int64(math.Round(1000 * queue.WeightedShare(cluster.FromList(q.Status.Used), capacity, q.Spec.Weight)))
		found = q.Status.WeightedShare
		return want > 0 && found == want, nil
	})
	t.Logf("Queue %s: weightedShare %d", name, found)
}

// TestQuotaHoldsAGroupWhileNodesAreFree: a group over its queue's quota waits, with
// QuotaExceeded and the numbers, although nodes are free; a group of another queue is
// admitted at once; the Queues report what they hold; once quota is released the
// waiting group runs.
func TestQuotaHoldsAGroupWhileNodesAreFree(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "quota", Count: 8, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	small, roomy := ns+"-small", ns+"-roomy"
	createQueue(t, c, small, 4, nil)
	createQueue(t, c, roomy, 8, nil)
	startMuster(t, env, musterOptions{})
	inQueue := func(q string) map[string]string { return map[string]string{musterv1alpha1.QueueAnnotation: q} }

	first := pytorchJob{ns: ns, name: "first", workers: 2, groupAnnotations: inQueue(small)}
	first.create(t, env, c)
	waitCondition(t, env, c, ns, "first", "PodsReady", metav1.ConditionTrue)
	over := pytorchJob{ns: ns, name: "over", workers: 1, groupAnnotations: inQueue(small)}
	over.create(t, env, c)
	cond := waitCondition(t, env, c, ns, "over", "Unschedulable", metav1.ConditionTrue)
	want := fmt.Sprintf("needs 2 nvidia.com/gpu, queue %s has 3 of 4 in use", small)
	if cond.Reason != "QuotaExceeded" || cond.Message != want {
		t.Errorf("Unschedulable condition: expected QuotaExceeded %q, found %s %q", want, cond.Reason, cond.Message)
	}
	other := pytorchJob{ns: ns, name: "other", workers: 1, groupAnnotations: inQueue(roomy)}
	other.create(t, env, c)
	waitCondition(t, env, c, ns, "other", "PodsReady", metav1.ConditionTrue)
	if s := stateOf(t, env, ns, "over"); s.holding != 0 {
		t.Errorf("expected the group over quota to hold nothing while it waits, found %d pods bound", s.holding)
	}
	wantQueueStatus(t, env, c, small, 1, 1, 3)
	wantQueueStatus(t, env, c, roomy, 1, 0, 2)
	wantWeightedShare(t, env, c, small)
	wantWeightedShare(t, env, c, roomy)

	deleteJob(t, env, c, ns, "first")
	waitCondition(t, env, c, ns, "over", "PodsReady", metav1.ConditionTrue)
	wantQueueStatus(t, env, c, small, 1, 0, 2)
}

// TestNamespaceSelectorChoosesTheQueue: a group that names no queue falls into the
// Queue whose namespaceSelector matches its namespace, and is held to its quota; a
// group of a namespace no selector matches falls into the default queue.
func TestNamespaceSelectorChoosesTheQueue(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns, elsewhere := env.Namespace(t), env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "nssel", Count: 3, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	team := ns + "-team"
	createQueue(t, c, team, 1, &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}})
	labelNamespace(t, env, ns, "team", team)
	startMuster(t, env, musterOptions{})

	(pytorchJob{ns: ns, name: "first", workers: 0}).create(t, env, c)
	waitCondition(t, env, c, ns, "first", "PodsReady", metav1.ConditionTrue)
	(pytorchJob{ns: ns, name: "second", workers: 0}).create(t, env, c)
	cond := waitCondition(t, env, c, ns, "second", "Unschedulable", metav1.ConditionTrue)
	if cond.Reason != "QuotaExceeded" || !strings.Contains(cond.Message, "queue "+team+" has 1 of 1 in use") {
		t.Errorf("Unschedulable condition: expected QuotaExceeded in queue %s, found %s %q", team, cond.Reason, cond.Message)
	}
	(pytorchJob{ns: elsewhere, name: "unmatched", workers: 0}).create(t, env, c)
	waitCondition(t, env, c, elsewhere, "unmatched", "PodsReady", metav1.ConditionTrue)
	wantQueueStatus(t, env, c, team, 1, 1, 1)
}

// labelNamespace sets a label on a namespace.
func labelNamespace(t *testing.T, env *sandboxtest.Env, name, key, value string) {
	t.Helper()
	ctx := context.Background()
	ns, err := env.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading namespace %s: %v", name, err)
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[key] = value
	if _, err := env.Kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("labelling namespace %s: %v", name, err)
	}
}

// TestHeldQueueStatusDoesNotHoldTheQueue: muster's write of a Queue's status, held by the
// API server, holds up nothing else: a pod of the Queue is bound meanwhile. Once the API
// server answers, the newer status is written: the Queue shows the pod's group admitted.
// (That write was made on muster's loop, once a second for a Queue whose numbers
// changed: a held one stopped all scheduling for up to the request's 30 s.)
func TestHeldQueueStatusDoesNotHoldTheQueue(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	c := newClient(t, env.Config)
	env.CreateNodes(t, sandbox.NodePool{Name: "heldqueue", Count: 1, CPU: "16", Memory: "64Gi"})
	createQueue(t, c, ns, 8, &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}})
	proxy := env.StartProxy(t)
	h := newHeldRequest(http.MethodPatch, "/apis/"+musterv1alpha1.GroupName+"/v1alpha1/queues/"+ns+"/status", `"status"`)
	proxy.SetHook(h.hook)
	startMuster(t, env, musterOptions{proxy: proxy})
	boundWhileHeld(t, env, ns, h, "its status write of Queue "+ns)
	close(h.release)
	t.Logf("the held write, released: %d", <-h.answer)
	wantQueueStatus(t, env, c, ns, 1, 0, 0)
}

// TestFailedQueueStatusIsWrittenAgain: the API server answers muster's first write of a
// new Queue's status with 500, and nothing changes in the Queue after it: muster sends
// the write again, and the Queue gets its Active condition.
func TestFailedQueueStatusIsWrittenAgain(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	c := newClient(t, env.Config)
	createQueue(t, c, ns, 8, &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}})
	proxy := env.StartProxy(t)
	hook, writes := refuseFirst(http.MethodPatch, "/apis/"+musterv1alpha1.GroupName+"/v1alpha1/queues/"+ns+"/status", "")
	proxy.SetHook(hook)
	startMuster(t, env, musterOptions{proxy: proxy})
	env.WaitFor(t, "Queue "+ns+" Active", func(ctx context.Context) (bool, error) {
		q := &musterv1alpha1.Queue{}
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, q); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(q.Status.Conditions, "Active"), nil
	})
	if n := writes.Load(); n < 2 {
		t.Errorf("the Queue's status written with %d writes, want the refused one and another", n)
	}
	t.Logf("the Queue's status written after %d writes, the first answered 500", writes.Load())
}
