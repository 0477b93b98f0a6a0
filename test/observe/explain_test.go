package observe

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// gather runs what `muster explain TARGET -n NS` runs.
func gather(t *testing.T, env *sandboxtest.Env, target, ns string) explain.Facts {
	t.Helper()
	f, err := explain.Gather(context.Background(), explain.Clients{Kube: env.Kube, Dynamic: env.Dynamic}, target, ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatalf("explain %s -n %s: %v", target, ns, err)
	}
	return f
}

// waitExplain polls explain until ready says the facts show the state to explain.
func waitExplain(t *testing.T, env *sandboxtest.Env, target, ns string, ready func(explain.Facts) bool) explain.Report {
	t.Helper()
	var last explain.Facts
	env.WaitFor(t, "explain "+target+" to show the expected state", func(context.Context) (bool, error) {
		last = gather(t, env, target, ns)
		return ready(last), nil
	})
	return explain.Build(last)
}

func phase(p string) func(explain.Facts) bool {
	return func(f explain.Facts) bool { return f.Lifecycle != nil && f.Lifecycle.Phase == p }
}

var (
	rfc3339  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	inDur    = regexp.MustCompile(`\(in -?[0-9hms.]+\)`)
	afterDur = regexp.MustCompile(`after [0-9hms.]+:`)
	retryIn  = regexp.MustCompile(`in [0-9.]+m?s\b`)
)

// normalize blanks what changes from run to run: times and durations measured live.
func normalize(s string) string {
	s = rfc3339.ReplaceAllString(s, "<time>")
	s = inDur.ReplaceAllString(s, "(in <duration>)")
	s = afterDur.ReplaceAllString(s, "after <duration>:")
	return retryIn.ReplaceAllString(s, "in <duration>")
}

// golden compares the report's text with testdata/NAME.txt, or rewrites it with -rewrite,
// and checks the verdict names the expected step.
func golden(t *testing.T, name string, r explain.Report, step int) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	got := normalize(b.String())
	compareGolden(t, "muster explain", name, got)
	if r.Verdict.Step != step {
		t.Errorf("verdict names step %d, want step %d:\n%s", r.Verdict.Step, step, got)
	}
}

func TestExplainFits(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "fits", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	startMuster(t, env)
	ns := namespace(t, env, "explain-fits")
	podGroup(t, env, ns, "bert", 2, nil, nil)
	createMembers(t, env, ns, "bert", 2, 1, nil)
	r := waitExplain(t, env, "podgroup/bert", ns, func(f explain.Facts) bool {
		return phase("Running")(f) && readyMembers(f) == 2
	})
	golden(t, "fits", r, 0)
}

func readyMembers(f explain.Facts) int {
	n := 0
	for _, p := range f.Members {
		if sandboxtest.PodReady(p) {
			n++
		}
	}
	return n
}

func TestExplainImpossible(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "four", Count: 2, CPU: "32", Memory: "128Gi", GPUs: 4})
	startMuster(t, env)
	ns := namespace(t, env, "explain-impossible")
	podGroup(t, env, ns, "huge", 1, nil, nil)
	createMembers(t, env, ns, "huge", 1, 8, nil)
	golden(t, "impossible", waitExplain(t, env, "podgroup/huge", ns, phase("Impossible")), 4)
}

func TestExplainQuotaBound(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "quota", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	queue := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": musterv1alpha1.GroupVersion.String(), "kind": "Queue",
		"metadata": map[string]any{"name": "small"},
		"spec": map[string]any{"quota": map[string]any{"nvidia.com/gpu": "2"},
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "explain-quota"}}},
	}}
	if _, err := env.Dynamic.Resource(musterv1alpha1.GroupVersion.WithResource("queues")).Create(context.Background(), queue, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startMuster(t, env)
	ns := namespace(t, env, "explain-quota")
	inSmall := map[string]string{musterv1alpha1.QueueAnnotation: "small"}
	podGroup(t, env, ns, "first", 2, inSmall, nil)
	createMembers(t, env, ns, "first", 2, 1, nil)
	waitExplain(t, env, "podgroup/first", ns, phase("Running"))
	podGroup(t, env, ns, "second", 2, inSmall, nil)
	createMembers(t, env, ns, "second", 2, 1, nil)
	r := waitExplain(t, env, "podgroup/second", ns, func(f explain.Facts) bool {
		// The Queue's status is written beside scheduling: wait until it shows the quota used.
		used := f.Queue != nil && f.Queue.Status.Used.Name("nvidia.com/gpu", resource.DecimalSI).Value() == 2
		// And for the forecast made since: first declares no run time, so the quota
		// it holds is not expected back.
		// The group's record may not be written yet: phase checks it first.
		if !phase("Queued")(f) {
			return false
		}
		forecast := strings.HasPrefix(f.Lifecycle.ExpectedStartUnknown, "only ")
		return f.Lifecycle.WaitingKind == "QuotaExceeded" && used && forecast
	})
	golden(t, "quota-bound", r, 4)
}

func TestExplainWorkerNeverReady(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "init", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	startMuster(t, env)
	ns := namespace(t, env, "explain-never-ready")
	podGroup(t, env, ns, "stuck", 2, map[string]string{musterv1alpha1.StartTimeoutAnnotation: "10m"}, nil)
	createMembers(t, env, ns, "stuck", 2, 1, func(i int, b *sandboxtest.PodBuilder) {
		if i == 1 {
			b.InitContainer("fetch-dataset").Annotate(kubelet.AnnotationFailInit, "true").RestartPolicy(corev1.RestartPolicyOnFailure)
		}
	})
	r := waitExplain(t, env, "podgroup/stuck", ns, func(f explain.Facts) bool {
		if !phase("Starting")(f) || readyMembers(f) != 1 {
			return false
		}
		for _, p := range f.Members {
			for _, s := range p.Status.InitContainerStatuses {
				if s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff" {
					return true
				}
			}
		}
		return false
	})
	golden(t, "worker-never-ready", r, 5)
}

// TestExplainWorkerFailedToStart: a worker with restartPolicy Never fails its init
// container; muster ends the attempt at once, and explain names the container in step 6.
func TestExplainWorkerFailedToStart(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "failstart", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	startMuster(t, env)
	ns := namespace(t, env, "explain-failed-start")
	podGroup(t, env, ns, "broken", 2, map[string]string{
		musterv1alpha1.StartTimeoutAnnotation: "10m",
		musterv1alpha1.BackoffBaseAnnotation:  "10m",
		musterv1alpha1.BackoffMaxAnnotation:   "10m",
	}, nil)
	createMembers(t, env, ns, "broken", 2, 1, func(i int, b *sandboxtest.PodBuilder) {
		if i == 1 {
			b.InitContainer("fetch-dataset").Annotate(kubelet.AnnotationFailInit, "true")
		}
	})
	// In Backoff, once muster has created the evicted members again (they have no
	// controller), unbound.
	r := waitExplain(t, env, "podgroup/broken", ns, func(f explain.Facts) bool {
		if !phase("Backoff")(f) || len(f.Members) != 2 {
			return false
		}
		for _, p := range f.Members {
			if p.DeletionTimestamp != nil || p.Spec.NodeName != "" {
				return false
			}
		}
		return true
	})
	golden(t, "worker-failed-to-start", r, 6)
}

func TestExplainLauncherOutsideGroup(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "mpi", Count: 3, CPU: "16", Memory: "64Gi", GPUs: 1})
	env.InstallPyTorchJobCRD(t)
	startMuster(t, env)
	ns := namespace(t, env, "explain-launcher")
	// A PyTorchJob that declares a master and two workers; no operator runs in the
	// sandbox, so the test creates the pods the operator would, with the master left
	// out of the group. (A batch Job stood in before, but the sandbox's Job controller
	// releases pods that do not match its selector, taking their owner reference away.)
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"namespace": ns, "name": "allreduce"},
		"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1)},
			"Worker": map[string]any{"replicas": int64(2)},
		}},
	}}
	gvr := schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	job, err := env.Dynamic.Resource(gvr).Namespace(ns).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.NewControllerRef(job, schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"})
	podGroup(t, env, ns, "allreduce", 3, nil, owner)
	for i := 0; i < 2; i++ {
		p := member(ns, "allreduce", i, 1).Obj()
		p.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "allreduce"}
		p.OwnerReferences = []metav1.OwnerReference{*owner}
		env.CreatePod(t, p)
	}
	master := sandboxtest.Pod(ns, "allreduce-master-0").SchedulerName("muster").Obj()
	master.OwnerReferences = []metav1.OwnerReference{*owner}
	env.CreatePod(t, master)
	r := waitExplain(t, env, "pytorchjob/allreduce", ns, func(f explain.Facts) bool {
		return phase("Gathering")(f) && len(f.Outside) == 1
	})
	golden(t, "launcher-outside-group", r, 3)
}

func TestExplainCancelled(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "cancel", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	startMuster(t, env)
	ns := namespace(t, env, "explain-cancelled")
	podGroup(t, env, ns, "gone", 2, nil, nil)
	createMembers(t, env, ns, "gone", 2, 1, nil)
	// Admitted and bound: Starting, or already Running when the status write that
	// showed Starting was replaced by a newer one before it was sent (a slow run).
	waitExplain(t, env, "podgroup/gone", ns, func(f explain.Facts) bool { return phase("Starting")(f) || phase("Running")(f) })
	ctx := context.Background()
	if err := env.Dynamic.Resource(podGroups).Namespace(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if err := env.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	var last explain.Facts
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("group found: %v (%s)", last.GroupFound, last.GroupAPI)
			if u, err := env.Dynamic.Resource(podGroups).Namespace(ns).Get(context.Background(), "gone", metav1.GetOptions{}); err == nil {
				t.Logf("PodGroup still there: created %s, deleting %v, finalizers %v, managers %v", u.GetCreationTimestamp(), u.GetDeletionTimestamp(), u.GetFinalizers(), managers(u.GetManagedFields()))
			}
			for _, p := range last.Members {
				t.Logf("member left: %s uid %s node %q phase %s deleting %v", p.Name, p.UID, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
			}
		}
	})
	r := waitExplain(t, env, "podgroup/gone", ns, func(f explain.Facts) bool {
		last = f
		return !f.GroupFound && len(f.Members) == 0
	})
	golden(t, "cancelled", r, 1)
	// Nothing of the cancelled group is held: every node is free again.
	for _, name := range []string{"cancel-0", "cancel-1"} {
		pods, err := env.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 0 {
			t.Errorf("node %s still holds %d pods after cancellation", name, len(pods.Items))
		}
	}
}

// unboundMembers counts the group's members that exist, are not being deleted and are
// not bound.
func unboundMembers(f explain.Facts) int {
	n := 0
	for _, p := range f.Members {
		if p.DeletionTimestamp == nil && p.Spec.NodeName == "" {
			n++
		}
	}
	return n
}

func managers(fields []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.Manager+":"+string(f.Operation))
	}
	return out
}

func TestExplainPreempted(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "preempt", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	ctx := context.Background()
	class := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "explain-urgent"}, Value: 1000}
	if _, err := env.Kube.SchedulingV1().PriorityClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Kube.SchedulingV1().PriorityClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})
	startMuster(t, env)
	ns := namespace(t, env, "explain-preempted")
	podGroup(t, env, ns, "research", 2, nil, nil)
	createMembers(t, env, ns, "research", 2, 1, nil)
	waitExplain(t, env, "podgroup/research", ns, phase("Running"))
	podGroup(t, env, ns, "prod", 2, nil, nil)
	createMembers(t, env, ns, "prod", 2, 1, func(_ int, b *sandboxtest.PodBuilder) { b.PriorityClass(class.Name) })
	waitExplain(t, env, "podgroup/prod", ns, phase("Running"))
	// Preempted, the group is queued again at once in its place (no backoff), once muster
	// has created its evicted members again (they have no controller), unbound.
	// Its expected start comes with a forecast made once prod holds the GPUs, at most
	// 10 s after: unknown, since prod declares no run time.
	golden(t, "preempted", waitExplain(t, env, "podgroup/research", ns, func(f explain.Facts) bool {
		return phase("Queued")(f) && unboundMembers(f) == 2 && strings.HasPrefix(f.Lifecycle.ExpectedStartUnknown, "only ")
	}), 4)
}
