package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestGatheringNamesTheOwnersReplicas: a PyTorchJob declares a master and 8 workers
// and its PodGroup requires 9, but only the workers carry the group label. The group
// gathers, and its condition says what the PyTorchJob declares.
func TestGatheringNamesTheOwnersReplicas(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.InstallPyTorchJobCRD(t)
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"namespace": ns, "name": "train"},
		"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1)},
			"Worker": map[string]any{"replicas": int64(8)},
		}},
	}}
	expectGatheringNamesOwner(t, env, ns, job, 9, "train-worker", 8, "PyTorchJob train declares 9 replicas (Master 1, Worker 8)")
}

// TestGatheringNamesTheRayClustersPods: the same for a RayCluster (KubeRay) of a head
// and a group of 4 GPU workers whose PodGroup requires 5, when only the workers carry the
// group label: muster serve, as deployed, reads the RayCluster (its ClusterRole grants
// get on rayclusters) and says what it declares; `muster explain raycluster/llm-batch`
// finds it and its group, and stops at the missing member.
func TestGatheringNamesTheRayClustersPods(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.InstallRayClusterCRD(t)
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayCluster",
		"metadata": map[string]any{"namespace": ns, "name": "llm-batch"},
		"spec": map[string]any{
			"headGroupSpec": map[string]any{"rayStartParams": map[string]any{}},
			"workerGroupSpecs": []any{map[string]any{
				"groupName": "gpu", "replicas": int64(4), "minReplicas": int64(4), "maxReplicas": int64(4)}},
		},
	}}
	want := "RayCluster llm-batch declares 5 replicas (head 1, gpu 4)"
	expectGatheringNamesOwner(t, env, ns, cluster, 5, "llm-batch-gpu-worker", 4, want)

	f, err := explain.Gather(context.Background(), explain.NewClients(env.Kube, env.Dynamic), "raycluster/llm-batch", ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if f.Parent == nil || f.Parent.GetAPIVersion() != "ray.io/v1" || len(f.Members) != 4 {
		t.Fatalf("raycluster/llm-batch: parent %v (%s), %d members; expected RayCluster llm-batch at ray.io/v1 and its 4 pods", f.Parent, f.ParentProblem, len(f.Members))
	}
	report := explain.Build(f)
	if v := report.Verdict; v.Step != 3 || v.Summary != "4 of minMember 5 members exist" {
		t.Errorf("raycluster/llm-batch: verdict %+v; expected step 3: 4 of minMember 5 members exist", v)
	}
	if ev := strings.Join(report.Steps[2].Evidence, "; "); !strings.Contains(ev, want) {
		t.Errorf("raycluster/llm-batch: step 3 evidence %q; expected it to say %q", ev, want)
	}
}

// expectGatheringNamesOwner creates owner, a PodGroup it owns that requires minMember,
// and pods of it (prefix-0, prefix-1, ...) carrying the group label, starts muster, and
// waits until the group's Admitted condition says want and counts the pods.
func expectGatheringNamesOwner(t *testing.T, env *sandboxtest.Env, ns string, owner *unstructured.Unstructured, minMember int32, prefix string, pods int, want string) {
	t.Helper()
	c := newClient(t, env.Config)
	if err := c.Create(context.Background(), owner); err != nil {
		t.Fatalf("creating %s %s: %v", owner.GetKind(), owner.GetName(), err)
	}
	name := owner.GetName()
	ref := metav1.OwnerReference{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: name, UID: owner.GetUID(), Controller: ptr.To(true)}
	pg := &spv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{ref}},
		Spec:       spv1alpha1.PodGroupSpec{MinMember: minMember},
	}
	if err := c.Create(context.Background(), pg); err != nil {
		t.Fatalf("creating PodGroup %s: %v", name, err)
	}
	for i := range pods {
		p := sandboxtest.Pod(ns, fmt.Sprintf("%s-%d", prefix, i)).GPUs(1).SchedulerName("muster").Obj()
		p.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: name}
		p.OwnerReferences = []metav1.OwnerReference{ref}
		env.CreatePod(t, p)
	}
	startMuster(t, env, musterOptions{})
	var last metav1.Condition
	env.WaitFor(t, "the Gathering condition to name the owner's replicas", func(context.Context) (bool, error) {
		last, _ = groupCondition(t, c, ns, name, "Admitted")
		return strings.Contains(last.Message, want), nil
	})
	if joined := fmt.Sprintf("members joined: %d of the %d", pods, minMember); !strings.Contains(last.Message, joined) {
		t.Errorf("Admitted message %q: expected it to count %d of the %d members", last.Message, pods, minMember)
	}
}

// TestKubeletRejectionIsPlacedAgainAlone: another scheduler binds a pod to a node
// between muster's snapshot and its bind; the kubelet rejects muster's member
// (OutOfnvidia.com/gpu). The member is placed again alone, on the free node, and the
// group starts in its first attempt, never evicted.
func TestKubeletRejectionIsPlacedAgainAlone(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "reject", Count: 3, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	var once sync.Once
	var taken string
	proxy := env.StartProxy(t)
	proxy.SetHook(func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if _, _, node, ok := sandboxtest.BindingOf(r); ok {
			once.Do(func() {
				taken = node
				intruder := env.CreatePod(t, sandboxtest.Pod(ns, "intruder").GPUs(1).SchedulerName("other-scheduler").Obj())
				env.Bind(t, intruder, node)
				env.WaitForPod(t, intruder, "Running", sandboxtest.PodPhase(corev1.PodRunning))
			})
		}
		forward.ServeHTTP(w, r)
	})
	startMuster(t, env, musterOptions{proxy: proxy})
	job := pytorchJob{ns: ns, name: "race", workers: 1, plain: true}
	job.create(t, env, c)
	waitCondition(t, env, c, ns, "race", "PodsReady", metav1.ConditionTrue)
	env.WaitFor(t, "the lifecycle record of a Running group", func(ctx context.Context) (bool, error) {
		rec := lifecycleOf(t, c, ns, "race")
		if rec.Phase != "Running" {
			return false, nil
		}
		if rec.Attempt != 1 || rec.Failures != 0 {
			t.Errorf("expected the group Running in attempt 1 with no failure, found attempt %d, %d failures", rec.Attempt, rec.Failures)
		}
		return true, nil
	})
	events, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rejected := false
	for _, ev := range events.Items {
		switch ev.Reason {
		case "KubeletRejected":
			rejected = true
		case "StartTimeout", "RecoveryTimeout":
			t.Errorf("expected the group not evicted, found event %s: %s", ev.Reason, ev.Message)
		}
	}
	if !rejected {
		t.Errorf("expected a KubeletRejected event for the member bound to %s, found none", taken)
	}
	for _, name := range job.podNames() {
		if p := getPod(t, env, ns, name); p.Spec.NodeName == taken {
			t.Errorf("expected no member on %s, taken by another scheduler; found %s", taken, name)
		}
	}
	if cond, _ := groupCondition(t, c, ns, "race", "Evicted"); cond.Status == metav1.ConditionTrue {
		t.Errorf("expected the group never evicted, found %s: %s", cond.Reason, cond.Message)
	}
}

// lifecycleOf reads the lifecycle record muster writes on a scheduler-plugins PodGroup.
func lifecycleOf(t *testing.T, c client.Client, ns, name string) musterv1alpha1.GroupLifecycle {
	t.Helper()
	pg := &spv1alpha1.PodGroup{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
		t.Fatalf("reading PodGroup %s/%s: %v", ns, name, err)
	}
	rec, err := recordOn(pg.Annotations, "PodGroup "+ns+"/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestBasicPodGroupIsNoGang: a native PodGroup with the basic policy schedules each of
// its pods alone. On 2 one-GPU nodes, 2 of its 3 one-GPU pods run; a gang of 3 could
// not run at all.
func TestBasicPodGroupIsNoGang(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "basic", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	g := gangFrom(t, readManifest(t, "native/generated.yaml"), ns, "each", 3, nil)
	pg := g.object.(*schedulingv1beta1.PodGroup)
	pg.Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
	g.create(t, c)
	env.WaitFor(t, "2 of the 3 pods Ready", func(context.Context) (bool, error) {
		return podsOf(t, c, ns, "each")["each"].ready == 2, nil
	})
	if s := podsOf(t, c, ns, "each")["each"]; s.holding != 2 {
		t.Errorf("expected 2 pods bound and the third waiting for a GPU, found %d bound", s.holding)
	}
	// Each pod is a group of its own: muster records each one's lifecycle on the pod.
	for _, p := range g.pods {
		env.WaitFor(t, "a lifecycle record of a group of one on pod "+p.Name, func(ctx context.Context) (bool, error) {
			rec, ok, err := musterv1alpha1.RecordIn(getPod(t, env, ns, p.Name).Annotations)
			if err != nil || !ok {
				return false, err
			}
			if rec.MinMember != 1 {
				return false, fmt.Errorf("expected a group of one, found minMember %d", rec.MinMember)
			}
			return true, nil
		})
	}
}
