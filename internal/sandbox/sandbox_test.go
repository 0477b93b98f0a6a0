package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	seed, err := sandbox.Preset(sandbox.PresetSeed, sandbox.PresetOptions{})
	if err != nil {
		panic(err)
	}
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{Cluster: seed, FakeClock: true, VerifyStop: true}))
}

// gpuPool is a pool of n nodes with gpus GPUs each, named for one test.
func gpuPool(name string, n, gpus int) sandbox.NodePool {
	return sandbox.NodePool{Name: name, Count: n, CPU: "16", Memory: "64Gi", GPUs: gpus}
}

func TestSeedPresetNodesHaveCapacity(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: sandbox.LabelPool + "=gpu"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 8 {
		t.Fatalf("expected 8 seed nodes, found %d", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		gpus := n.Status.Allocatable[sandbox.ResourceGPU]
		if gpus.Value() != 1 {
			t.Errorf("node %s: expected 1 allocatable nvidia.com/gpu, found %s", n.Name, gpus.String())
		}
		if !nodeReady(&n) {
			t.Errorf("node %s: expected Ready, found conditions %v", n.Name, n.Status.Conditions)
		}
	}
}

func TestBoundPodBecomesRunningThenReady(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("ready", 1, 8))
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").GPUs(1).InitContainer("setup").Obj())
	env.Bind(t, pod, nodes[0])

	got := env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)
	if got.Status.Phase != v1.PodRunning {
		t.Errorf("expected phase Running, found %s", got.Status.Phase)
	}
	if s := got.Status.ContainerStatuses; len(s) != 1 || s[0].State.Running == nil || !s[0].Ready {
		t.Errorf("expected container main running and ready, found %+v", s)
	}
	if s := got.Status.InitContainerStatuses; len(s) != 1 || s[0].State.Terminated == nil || s[0].State.Terminated.ExitCode != 0 {
		t.Errorf("expected init container setup completed, found %+v", s)
	}
	if got.Status.PodIP == "" || got.Status.HostIP == "" {
		t.Errorf("expected a pod IP and a host IP, found %q and %q", got.Status.PodIP, got.Status.HostIP)
	}
}

func TestFailInitNeverBecomesReady(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("failinit", 1, 8))
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").GPUs(1).InitContainer("rendezvous").
		RestartPolicy(v1.RestartPolicyOnFailure).Annotate(kubelet.AnnotationFailInit, "true").Obj())
	env.Bind(t, pod, nodes[0])

	crashing := func(p *v1.Pod) bool {
		s := p.Status.InitContainerStatuses
		return len(s) == 1 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "CrashLoopBackOff"
	}
	env.WaitForPod(t, pod, "in CrashLoopBackOff", crashing)
	// Let a long simulated time pass: the pod must still be initialising.
	for range 20 {
		env.Clock.Step(time.Minute)
	}
	got := env.WaitForPod(t, pod, "still in CrashLoopBackOff", crashing)
	if got.Status.Phase != v1.PodPending || sandboxtest.PodReady(got) {
		t.Errorf("expected Pending and not Ready, found phase %s conditions %v", got.Status.Phase, got.Status.Conditions)
	}
}

// TestFailInitWithRestartNeverFailsThePod: with restartPolicy Never the kubelet does not
// restart the failed init container; the pod is Failed and its GPU is free again.
func TestFailInitWithRestartNeverFailsThePod(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("failnever", 1, 1))
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").GPUs(1).InitContainer("rendezvous").
		Annotate(kubelet.AnnotationFailInit, "true").Obj())
	env.Bind(t, pod, nodes[0])
	got := env.WaitForPod(t, pod, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	s := got.Status.InitContainerStatuses
	if len(s) != 1 || s[0].State.Terminated == nil || s[0].State.Terminated.ExitCode != 1 {
		t.Errorf("expected init container rendezvous terminated with exit code 1, found %+v", s)
	}
	// The node's GPU is free: a second pod is admitted there and runs.
	next := env.CreatePod(t, sandboxtest.Pod(ns, "worker-1").GPUs(1).Obj())
	env.Bind(t, next, nodes[0])
	env.WaitForPod(t, next, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
}

func TestReadyAfterDelaysReadiness(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("readyafter", 1, 8))
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").Annotate(kubelet.AnnotationReadyAfter, "30s").Obj())
	env.Bind(t, pod, nodes[0])

	got := env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)
	started := got.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	readyAt := condition(got, v1.PodReady).LastTransitionTime.Time
	if d := readyAt.Sub(started); d != 30*time.Second {
		t.Errorf("expected Ready 30s after the container started, found %s", d)
	}
}

func TestRunForEndsThePod(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("runfor", 1, 8))
	for _, tc := range []struct {
		name     string
		exitCode string
		phase    v1.PodPhase
	}{
		{name: "succeeds", exitCode: "0", phase: v1.PodSucceeded},
		{name: "fails", exitCode: "3", phase: v1.PodFailed},
	} {
		pod := env.CreatePod(t, sandboxtest.Pod(ns, tc.name).GPUs(1).
			Annotate(kubelet.AnnotationRunFor, "10m").Annotate(kubelet.AnnotationExitCode, tc.exitCode).Obj())
		env.Bind(t, pod, nodes[0])
		env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)
		got := env.WaitForPod(t, pod, string(tc.phase), sandboxtest.PodPhase(tc.phase))
		term := got.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode == 0 != (tc.phase == v1.PodSucceeded) {
			t.Errorf("%s: expected container terminated with exit code %s, found %+v", tc.name, tc.exitCode, got.Status.ContainerStatuses[0].State)
			continue
		}
		if ran := term.FinishedAt.Sub(term.StartedAt.Time); ran != 10*time.Minute {
			t.Errorf("%s: expected the container to run 10m, found %s", tc.name, ran)
		}
	}
}

func TestNodeDownFailsItsPods(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("down", 1, 8))
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").GPUs(1).Obj())
	env.Bind(t, pod, nodes[0])
	env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)

	patch := []byte(`{"metadata":{"annotations":{"` + kubelet.AnnotationDown + `":"true"}}}`)
	ctx := context.Background()
	if _, err := env.Kube.CoreV1().Nodes().Patch(ctx, nodes[0], types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got := env.WaitForPod(t, pod, "Failed", sandboxtest.PodPhase(v1.PodFailed))
	if got.Status.Reason != kubelet.ReasonNodeLost {
		t.Errorf("expected reason %s, found %q", kubelet.ReasonNodeLost, got.Status.Reason)
	}
	env.WaitFor(t, "node NotReady with the unreachable taint", func(ctx context.Context) (bool, error) {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, nodes[0], metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !nodeReady(n) && len(n.Spec.Taints) == 1 && n.Spec.Taints[0].Key == v1.TaintNodeUnreachable, nil
	})
}

func TestPodThatDoesNotFitIsRejected(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("nofit", 1, 2))
	first := env.CreatePod(t, sandboxtest.Pod(ns, "first").GPUs(2).Obj())
	env.Bind(t, first, nodes[0])
	env.WaitForPod(t, first, "Running", sandboxtest.PodPhase(v1.PodRunning))

	second := env.CreatePod(t, sandboxtest.Pod(ns, "second").GPUs(1).Obj())
	env.Bind(t, second, nodes[0])
	got := env.WaitForPod(t, second, "Failed", sandboxtest.PodPhase(v1.PodFailed))
	if want := "OutOfnvidia.com/gpu"; got.Status.Reason != want {
		t.Errorf("expected reason %s, found %q (message %q)", want, got.Status.Reason, got.Status.Message)
	}
}

func TestDeletingABoundPodCompletes(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("delete", 1, 1))
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").GPUs(1).Obj())
	env.Bind(t, pod, nodes[0])
	env.WaitForPod(t, pod, "Running", sandboxtest.PodPhase(v1.PodRunning))

	ctx := context.Background()
	if err := env.Kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "the pod to be gone", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// Its GPU is free again: a new pod is admitted on the one-GPU node.
	next := env.CreatePod(t, sandboxtest.Pod(ns, "worker-1").GPUs(1).Obj())
	env.Bind(t, next, nodes[0])
	env.WaitForPod(t, next, "Running", sandboxtest.PodPhase(v1.PodRunning))
}

// TestDeletedPodIsFailedBeforeItGoes: like a real kubelet, the sandbox's writes a
// deleted pod's terminal status (Failed, the running container exited on SIGTERM, its
// conditions kept) before it confirms the deletion. A Job with a podFailurePolicy
// counts a deleted pod only then. A finalizer keeps the pod here for the test to read.
func TestDeletedPodIsFailedBeforeItGoes(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("terminal", 1, 1))
	const hold = "e2e.muster.dev/hold"
	p := sandboxtest.Pod(ns, "worker-0").GPUs(1).Obj()
	p.Finalizers = []string{hold}
	pod := env.CreatePod(t, p)
	env.Bind(t, pod, nodes[0])
	running := env.WaitForPod(t, pod, "Running", sandboxtest.PodPhase(v1.PodRunning))
	ctx := context.Background()
	running.Status.Conditions = append(running.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "Test"})
	if _, err := env.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := env.WaitForPod(t, pod, "Failed while terminating", func(p *v1.Pod) bool {
		return p.DeletionTimestamp != nil && p.Status.Phase == v1.PodFailed
	})
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 143 || term.Reason != "Error" {
		t.Errorf("expected the container terminated with exit code 143 (SIGTERM), found %+v", got.Status.ContainerStatuses[0].State)
	}
	if c := sandboxtest.PodCondition(got, v1.DisruptionTarget); c != v1.ConditionTrue {
		t.Errorf("expected the DisruptionTarget condition kept, found %q", c)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := env.Kube.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "the pod to be gone", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestJobCreatesItsPodsAndCompletes: the sandbox runs the upstream Job controller, so a
// batch/v1 Job applied to it creates its pods, and completes once they succeed.
func TestJobCreatesItsPodsAndCompletes(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("job", 1, 2))
	ctx := context.Background()
	tmpl := sandboxtest.Pod(ns, "").GPUs(1).Annotate(kubelet.AnnotationRunFor, "1s").Obj() // restartPolicy Never
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template:       v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: tmpl.Annotations}, Spec: tmpl.Spec},
		},
	}
	if _, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []v1.Pod
	env.WaitFor(t, "the Job's 2 pods", func(ctx context.Context) (bool, error) {
		list, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=train"})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return len(pods) == 2, nil
	})
	for i := range pods {
		env.Bind(t, &pods[i], nodes[0])
	}
	env.WaitFor(t, "the Job Complete", func(ctx context.Context) (bool, error) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == v1.ConditionTrue {
				return j.Status.Succeeded == 2, nil
			}
		}
		return false, nil
	})
}

func TestMalformedAnnotationFailsThePod(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("badannotation", 1, 1))
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").Annotate(kubelet.AnnotationRunFor, "soon").Obj())
	env.Bind(t, pod, nodes[0])
	got := env.WaitForPod(t, pod, "Failed", sandboxtest.PodPhase(v1.PodFailed))
	want := `annotation sandbox.muster.dev/run-for: expected a non-negative duration such as 30s, found "soon"`
	if got.Status.Reason != kubelet.ReasonInvalidAnnotation || got.Status.Message != want {
		t.Errorf("expected reason %s message %q, found %q %q", kubelet.ReasonInvalidAnnotation, want, got.Status.Reason, got.Status.Message)
	}
}

func TestCRDsAreEstablished(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	for _, name := range []string{"queues.muster.dev", "podgroups.scheduling.x-k8s.io", "podgroups.scheduling.volcano.sh"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), ctrlclient.ObjectKey{Name: name}, crd); err != nil {
			t.Errorf("CRD %s: %v", name, err)
		}
	}
}

func TestKubeconfigReachesTheSandbox(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Sandbox.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("reading namespace default through the kubeconfig: %v", err)
	}
}

// nodeReady reports whether n's Ready condition is True.
func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// condition returns p's condition t; the test fails later on a zero value.
func condition(p *v1.Pod, t v1.PodConditionType) v1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

// BenchmarkBoundPodsBecomeRunning measures how fast bound pods become Running:
// 16 clients create and bind pods in parallel, as a scheduler would, and the
// simulated kubelet takes each to Running through the API server.
func BenchmarkBoundPodsBecomeRunning(b *testing.B) {
	env := sandboxtest.Shared(b)
	ns := env.Namespace(b)
	nodes := env.CreateNodes(b, sandbox.NodePool{Name: "bench", Count: 100, CPU: "64", Memory: "256Gi"})
	pods := env.Kube.CoreV1().Pods(ns)
	errs := make([]error, b.N)
	b.ResetTimer()
	workqueue.ParallelizeUntil(context.Background(), 16, b.N, func(i int) {
		ctx := context.Background()
		pod, err := pods.Create(ctx, sandboxtest.Pod(ns, fmt.Sprintf("pod-%d", i)).Obj(), metav1.CreateOptions{})
		if err == nil {
			binding := &v1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
				Target:     v1.ObjectReference{Kind: "Node", Name: nodes[i%len(nodes)]},
			}
			err = pods.Bind(ctx, binding, metav1.CreateOptions{})
		}
		errs[i] = err
	})
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	env.WaitFor(b, fmt.Sprintf("%d pods Running", b.N), func(ctx context.Context) (bool, error) {
		running, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
		return err == nil && len(running.Items) == b.N, err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
}

// TestDeletedPodGroupGoesWithItsLastPod: the API server stamps a native PodGroup with
// the podgroup-protection finalizer; the sandbox's upstream controller removes it once
// the deleted PodGroup has no running pod left, and not before.
func TestDeletedPodGroupGoesWithItsLastPod(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, gpuPool("protect", 1, 1))
	ctx := context.Background()
	pgs := env.Kube.SchedulingV1beta1().PodGroups(ns)
	newPodGroup := func(name string) *schedulingv1beta1.PodGroup {
		pg, err := pgs.Create(ctx, &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1},
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pg.Finalizers) == 0 {
			t.Fatalf("expected the API server to add the podgroup-protection finalizer to %s, found none", name)
		}
		return pg
	}
	pg := newPodGroup("job")
	// A PodGroup with no pod, deleted after job: the controller's one worker takes its
	// keys in the order of the deletions, so once the marker is gone the controller
	// has decided about job.
	marker := newPodGroup("marker")
	pod := sandboxtest.Pod(ns, "job-0").GPUs(1).Obj()
	pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &pg.Name}
	pod = env.CreatePod(t, pod)
	env.Bind(t, pod, nodes[0])
	env.WaitForPod(t, pod, "Running", sandboxtest.PodPhase(v1.PodRunning))

	for _, name := range []string{pg.Name, marker.Name} {
		if err := pgs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env.WaitFor(t, "the marker PodGroup, deleted after job, to be gone", func(ctx context.Context) (bool, error) {
		_, err := pgs.Get(ctx, marker.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if got, err := pgs.Get(ctx, pg.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("expected the PodGroup kept, terminating, while its pod runs; found %v, %v", got, err)
	}
	if err := env.Kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "the PodGroup to be gone", func(ctx context.Context) (bool, error) {
		_, err := pgs.Get(ctx, pg.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
