package e2e

import (
	"context"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// TestGroupCreatedAgainWhileItsPodsAreDeleted: a RayCluster deleted and applied again at
// once, through muster serve as deployed. The PodGroup is deleted, and created again
// with the same name, while the old pods are still being deleted (a finalizer holds them
// here, as a long grace period would); the new pods have new names, as KubeRay's do. The
// new group is admitted. (Its pods used to join the old group, cancelled with the
// PodGroup, and waited unbound for as long as they existed.)
func TestGroupCreatedAgainWhileItsPodsAreDeleted(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "again", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	ctx := context.Background()
	const hold = "e2e.muster.dev/hold"
	create := func(pods ...string) {
		objs := []client.Object{&spv1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ray"}, Spec: spv1alpha1.PodGroupSpec{MinMember: 2}}}
		for _, name := range pods {
			p := sandboxtest.Pod(ns, name).GPUs(1).SchedulerName("muster").Obj()
			p.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "ray"}
			p.Finalizers = []string{hold}
			objs = append(objs, p)
		}
		for _, obj := range objs {
			if err := c.Create(ctx, obj); err != nil {
				t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
			}
		}
		t.Cleanup(func() {
			for _, name := range pods {
				patch := []byte(`{"metadata":{"finalizers":null}}`)
				_, _ = env.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
		})
	}
	bound := func(names ...string) {
		for _, name := range names {
			env.WaitForPod(t, getPod(t, env, ns, name), "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
		}
	}
	old := []string{"ray-head-x7k2p", "ray-worker-q9m4d"}
	create(old...)
	bound(old...)

	deleteJob(t, env, c, ns, "ray") // the old pods stay, terminating
	env.WaitFor(t, "muster to cancel the old group (its Cancelled event, on its pods)", func(ctx context.Context) (bool, error) {
		events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(ev corev1.Event) bool {
			return ev.Reason == "Cancelled" && ev.InvolvedObject.Name == old[0]
		}), nil
	})
	fresh := []string{"ray-head-b3v8n", "ray-worker-h5t2w"}
	create(fresh...)
	bound(fresh...)
	for _, name := range old {
		if p := getPod(t, env, ns, name); p.DeletionTimestamp == nil {
			t.Errorf("old pod %s: expected it still being deleted, found it not", name)
		}
	}
}

// cancelledPod makes PodGroup ns/gone of one pod, gone-0, waits for it to be bound, has
// hook see every request from then on, and deletes the PodGroup: muster cancels the
// group and deletes gone-0.
func cancelledPod(t *testing.T, env *sandboxtest.Env, c client.Client, proxy *sandboxtest.Proxy, ns string, hook sandboxtest.Hook) {
	t.Helper()
	ctx := context.Background()
	pg := &spv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}, Spec: spv1alpha1.PodGroupSpec{MinMember: 1}}
	if err := c.Create(ctx, pg); err != nil {
		t.Fatalf("creating PodGroup gone: %v", err)
	}
	p := sandboxtest.Pod(ns, "gone-0").SchedulerName("muster").Obj()
	p.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "gone"}
	p = env.CreatePod(t, p)
	env.WaitForPod(t, p, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	proxy.SetHook(hook)
	if err := c.Delete(ctx, pg); err != nil {
		t.Fatalf("deleting PodGroup gone: %v", err)
	}
}

// waitPodGone waits until pod ns/name is gone.
func waitPodGone(t *testing.T, env *sandboxtest.Env, ns, name string) {
	t.Helper()
	env.WaitFor(t, "pod "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestHeldEvictionDoesNotHoldTheQueue: muster's deletion of a cancelled group's pod,
// held by the API server (as a slow admission webhook on pods would), holds up nothing
// else: a pod of another group is bound meanwhile, and the held deletion goes through
// once the API server answers. (Evictions were sent on muster's loop, which waited.)
func TestHeldEvictionDoesNotHoldTheQueue(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "heldevict", Count: 1, CPU: "16", Memory: "64Gi"})
	proxy := env.StartProxy(t)
	startMuster(t, env, musterOptions{proxy: proxy})
	h := newHeldRequest(http.MethodDelete, "/api/v1/namespaces/"+ns+"/pods/gone-0", "")
	cancelledPod(t, env, newClient(t, env.Config), proxy, ns, h.hook)
	boundWhileHeld(t, env, ns, h, "its deletion of pod gone-0")
	close(h.release)
	// Answered at once, or, had the hold outlasted muster's request timeout, sent again.
	t.Logf("the held deletion, released: %d", <-h.answer)
	waitPodGone(t, env, ns, "gone-0")
}

// TestFailedEvictionIsSentAgain: muster's deletion of a cancelled group's pod, answered
// with an error (500), is sent again, and the pod goes. (Each eviction was sent once:
// the pod stayed, and its group never finished cleaning up.)
func TestFailedEvictionIsSentAgain(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "failevict", Count: 1, CPU: "16", Memory: "64Gi"})
	proxy := env.StartProxy(t)
	startMuster(t, env, musterOptions{proxy: proxy})
	hook, deletes := refuseFirst(http.MethodDelete, "/api/v1/namespaces/"+ns+"/pods/gone-0", "")
	cancelledPod(t, env, newClient(t, env.Config), proxy, ns, hook)
	waitPodGone(t, env, ns, "gone-0")
	if n := deletes.Load(); n < 2 {
		t.Errorf("expected muster to send the deletion of gone-0 again after the 500, found %d deletions", n)
	}
	t.Logf("pod gone-0 gone after %d deletions, the first answered 500", deletes.Load())
}
