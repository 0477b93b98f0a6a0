package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// oneGPU is the ResourceClaimTemplate the DRA tests' workers take their GPU from.
const oneGPU = "one-gpu"

// draWorker makes a job's pod ask for its GPU as a DRA claim made from template oneGPU,
// instead of the nvidia.com/gpu extended resource.
func draWorker(p *corev1.Pod) {
	c := &p.Spec.Containers[0]
	delete(c.Resources.Requests, sandbox.ResourceGPU)
	delete(c.Resources.Limits, sandbox.ResourceGPU)
	tmpl := oneGPU
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: &tmpl})
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: "gpu"})
}

// cpuHog runs pod cpu-hog, of cpus cpus and no GPU, on node.
func cpuHog(t *testing.T, env *sandboxtest.Env, ns, node string, cpus int64) {
	t.Helper()
	hog := sandboxtest.Pod(ns, "cpu-hog").Obj()
	hog.Spec.NodeName = node
	hog.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resourceQuantity(cpus)
	env.CreatePod(t, hog)
}

// createTemplate creates template oneGPU in ns.
func createTemplate(t *testing.T, env *sandboxtest.Env, ns string) {
	t.Helper()
	if _, err := env.Kube.ResourceV1().ResourceClaimTemplates(ns).Create(context.Background(),
		sandboxtest.GPUClaimTemplate(ns, oneGPU, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createClaimTemplate creates ResourceClaimTemplate name in ns with spec.
func createClaimTemplate(t *testing.T, env *sandboxtest.Env, ns, name string, spec resourcev1.ResourceClaimSpec) {
	t.Helper()
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: spec}}
	if _, err := env.Kube.ResourceV1().ResourceClaimTemplates(ns).Create(context.Background(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createSelectorTemplate creates ResourceClaimTemplate name in ns: one GPU that the CEL
// expression selects.
func createSelectorTemplate(t *testing.T, env *sandboxtest.Env, ns, name, expression string) {
	t.Helper()
	spec := sandboxtest.GPUClaimSpec(1)
	spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expression}}}
	createClaimTemplate(t, env, ns, name, spec)
}

// useTemplate makes a pod that draWorker made take its GPU claim from template instead.
func useTemplate(p *corev1.Pod, template string) {
	p.Spec.ResourceClaims[len(p.Spec.ResourceClaims)-1].ResourceClaimTemplateName = ptr.To(template)
}

// claimsOfPods returns each pod's claims by pod name, read from the API server.
func claimsOfPods(t *testing.T, env *sandboxtest.Env, pods []corev1.Pod) map[string][]*resourcev1.ResourceClaim {
	t.Helper()
	out := map[string][]*resourcev1.ResourceClaim{}
	for i := range pods {
		p := &pods[i]
		for j := range p.Spec.ResourceClaims {
			name, _, err := resourceclaim.Name(p, &p.Spec.ResourceClaims[j])
			if err != nil || name == nil {
				t.Fatalf("pod %s: claim %s: %v", p.Name, p.Spec.ResourceClaims[j].Name, err)
			}
			claim, err := env.Kube.ResourceV1().ResourceClaims(p.Namespace).Get(context.Background(), *name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out[p.Name] = append(out[p.Name], claim)
		}
	}
	return out
}

// checkAllocated fails unless every running pod's claims are allocated devices of its
// own node, reserved for it (or for consumer, when set), and no device is given twice.
func checkAllocated(t *testing.T, env *sandboxtest.Env, pods []corev1.Pod) {
	t.Helper()
	taken := map[string]string{}
	for name, claims := range claimsOfPods(t, env, pods) {
		var pod *corev1.Pod
		for i := range pods {
			if pods[i].Name == name {
				pod = &pods[i]
			}
		}
		for _, c := range claims {
			a := c.Status.Allocation
			if a == nil {
				t.Errorf("pod %s runs with claim %s not allocated", name, c.Name)
				continue
			}
			reserved := false
			for _, r := range c.Status.ReservedFor {
				reserved = reserved || r.UID == pod.UID
			}
			if !reserved {
				t.Errorf("claim %s of %s reserved for %+v, not the pod", c.Name, name, c.Status.ReservedFor)
			}
			for _, r := range a.Devices.Results {
				if r.Pool != pod.Spec.NodeName {
					t.Errorf("pod %s on %s has device %s/%s", name, pod.Spec.NodeName, r.Pool, r.Device)
				}
				dev := r.Pool + "/" + r.Device
				if other, dup := taken[dev]; dup && other != c.Name {
					t.Errorf("device %s allocated to claims %s and %s", dev, other, c.Name)
				}
				taken[dev] = c.Name
			}
		}
	}
}

// TestDRAGangOnTheSandbox: a PyTorchJob-shaped gang whose 7 workers each get a one-GPU
// claim from a template runs on 2 nodes of 4 DRA GPUs, each claim allocated on its
// pod's node; a gang of 2 behind it waits, naming the plugin's reason, holds nothing, and
// runs when the first gang's pods are gone and their claims with them.
func TestDRAGangOnTheSandbox(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "dra", Count: 2, CPU: "32", Memory: "128Gi", DRAGPUs: 4, Clique: "clique-a"})
	createTemplate(t, env, ns)
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	big := pytorchJob{ns: ns, name: "big", workers: 6, mutate: draWorker}
	big.create(t, env, c)
	checkAllocated(t, env, waitRunning(t, env, ns, "big", 7))

	small := pytorchJob{ns: ns, name: "small", workers: 1, mutate: draWorker}
	small.create(t, env, c)
	// Until the resourceclaim controller has made its claims the gang waits for them;
	// then for devices.
	want := "cannot allocate all claims (claims of template " + ns + "/" + oneGPU + ": request gpu: 1 of class gpu.nvidia.com)"
	env.WaitFor(t, "small waiting for devices", func(context.Context) (bool, error) {
		cond, ok := groupCondition(t, c, ns, "small", "Unschedulable")
		return ok && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, want), nil
	})
	if got := stateOf(t, env, ns, "small").holding; got != 0 {
		t.Fatalf("the waiting gang holds %d pods", got)
	}
	f, err := explain.Gather(context.Background(), explain.NewClients(env.Kube, env.Dynamic), "podgroup/small", ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := explain.Build(f).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := "member small-master-0 claims gpu: claim "; !strings.Contains(text.String(), want) {
		t.Errorf("explain does not list the member's claims (%q):\n%s", want, text.String())
	}
	deletePods(t, env, ns, "big")
	checkAllocated(t, env, waitRunning(t, env, ns, "small", 2))
}

// deletePods deletes a job's pods at once, as a finished job's are.
func deletePods(t *testing.T, env *sandboxtest.Env, ns, job string) {
	t.Helper()
	if err := env.Kube.CoreV1().Pods(ns).DeleteCollection(context.Background(),
		metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: jobNameLabel + "=" + job}); err != nil {
		t.Fatal(err)
	}
}

// TestDRAGangInOneClique: on two NVLink domains of 2 nodes × 2 DRA GPUs, a gang of 4
// required in one domain (muster.dev/topology: nvidia.com/gpu.clique) gets all its
// devices in one, and a gang of 5 so required is Impossible: no domain has 5 devices.
func TestDRAGangInOneClique(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	for _, clique := range []string{"clique-a", "clique-b"} {
		env.CreateNodes(t, sandbox.NodePool{Name: "nv" + clique[len(clique)-1:], Count: 2, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: clique})
	}
	createTemplate(t, env, ns)
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	inClique := map[string]string{musterv1alpha1.TopologyAnnotation: sandbox.LabelGPUClique}
	four := pytorchJob{ns: ns, name: "four", workers: 3, groupAnnotations: inClique, mutate: draWorker}
	four.create(t, env, c)
	pods := waitRunning(t, env, ns, "four", 4)
	checkAllocated(t, env, pods)
	cliques := map[string]bool{}
	for _, p := range pods {
		n, err := env.Kube.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cliques[n.Labels[sandbox.LabelGPUClique]] = true
	}
	if len(cliques) != 1 {
		t.Fatalf("a gang required in one clique runs in %v", cliques)
	}
	five := pytorchJob{ns: ns, name: "five", workers: 4, groupAnnotations: inClique, mutate: draWorker}
	five.create(t, env, c)
	waitCondition(t, env, c, ns, "five", "Impossible", metav1.ConditionTrue)
	if got := stateOf(t, env, ns, "five").holding; got != 0 {
		t.Fatalf("the Impossible gang holds %d pods", got)
	}
}

// TestDRAStopReleasesDevices: a user stops a running gang (muster.dev/stopped): muster
// evicts its pods, their claims are given back, and a gang waiting for the devices runs.
func TestDRAStopReleasesDevices(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "drastop", Count: 1, CPU: "32", Memory: "128Gi", DRAGPUs: 4, Clique: "clique-s"})
	createTemplate(t, env, ns)
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	first := pytorchJob{ns: ns, name: "first", workers: 3, mutate: draWorker}
	first.create(t, env, c)
	claims := claimsOfPods(t, env, waitRunning(t, env, ns, "first", 4))
	second := pytorchJob{ns: ns, name: "second", workers: 1, mutate: draWorker}
	second.create(t, env, c)
	waitCondition(t, env, c, ns, "second", "Unschedulable", metav1.ConditionTrue)
	annotateGroup(t, c, ns, "first", musterv1alpha1.StoppedAnnotation, "true")
	env.WaitFor(t, "the stopped gang's claims released", func(ctx context.Context) (bool, error) {
		for _, cs := range claims {
			for _, claim := range cs {
				got, err := env.Kube.ResourceV1().ResourceClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{})
				if err == nil && got.UID == claim.UID && got.Status.Allocation != nil {
					return false, nil
				}
			}
		}
		return true, nil
	})
	checkAllocated(t, env, waitRunning(t, env, ns, "second", 2))
}

// annotateGroup sets an annotation on a job's scheduler-plugins PodGroup.
func annotateGroup(t *testing.T, c client.Client, ns, name, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	pg := &spv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Patch(context.Background(), pg, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// TestDRACrashBetweenClaimsAndBinds: muster is killed after it wrote some members'
// claims: with 2 members bound (the restarted muster completes the plan, allocating the
// rest on their planned nodes), and with none bound (it releases the claims reserved for
// members never bound, and places the gang anew). Either way every pod runs with its
// claims allocated on its node, and no device is given twice.
func TestDRACrashBetweenClaimsAndBinds(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "dracrash", Count: 2, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: "clique-c"})
	c := newClient(t, env.Config)
	for _, held := range []int32{2, 0} {
		t.Run(fmt.Sprintf("%d bound", held), func(t *testing.T) {
			ns := env.Namespace(t)
			createTemplate(t, env, ns)
			killAfterClaims(t, env, c, held, pytorchJob{ns: ns, name: "gang", workers: 3, plain: true, mutate: draWorker})
			startMuster(t, env, musterOptions{})
			checkAllocated(t, env, waitRunning(t, env, ns, "gang", 4))
		})
	}
}

// killAfterClaims starts muster through a proxy that lets held Bindings through and
// holds the rest, creates job, and kills muster once it has written a claim's status
// more than held times and asked for more than held Bindings.
func killAfterClaims(t *testing.T, env *sandboxtest.Env, c client.Client, held int32, job pytorchJob) {
	t.Helper()
	proxy := env.StartProxy(t)
	var binds, claimWrites atomic.Int32
	proxy.SetHook(func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if _, _, _, ok := sandboxtest.BindingOf(r); ok && binds.Add(1) > held {
			proxy.Hold(w, r)
			return
		}
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/status") && strings.Contains(r.URL.Path, "/resourceclaims/") {
			claimWrites.Add(1)
		}
		forward.ServeHTTP(w, r)
	})
	first := startMuster(t, env, musterOptions{proxy: proxy})
	job.create(t, env, c)
	env.WaitFor(t, "claims written and binds held", func(context.Context) (bool, error) {
		return claimWrites.Load() > held && binds.Load() > held, nil
	})
	first.kill(t)
}

// TestDRAQuotaByDeviceClass: a Queue whose quota names 4 devices of class
// gpu.nvidia.com admits one gang of 4 one-device claims and holds the second back
// (QuotaExceeded) on a cluster with room for both.
func TestDRAQuotaByDeviceClass(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "draq", Count: 2, CPU: "32", Memory: "128Gi", DRAGPUs: 4, Clique: "clique-q"})
	createTemplate(t, env, ns)
	c := newClient(t, env.Config)
	createQueue(t, c, ns, 0, nil, func(q *musterv1alpha1.Queue) {
		q.Spec.Quota = corev1.ResourceList{sandbox.DeviceClassGPU: resourceQuantity(4)}
	})
	startMuster(t, env, musterOptions{})
	cond := oneRunsOneWaitsForQuota(t, env, c, pytorchJob{ns: ns, workers: 3, mutate: draWorker})
	if !strings.Contains(cond.Reason+cond.Message, "Quota") && !strings.Contains(cond.Message, "quota") {
		t.Fatalf("the waiting gang's condition %+v does not name the quota", cond)
	}
}

// oneRunsOneWaitsForQuota creates two jobs, a and b, like job in the Queue named after
// its namespace, waits until one holds all its pods and the other none, and returns the
// waiting one's Unschedulable condition.
func oneRunsOneWaitsForQuota(t *testing.T, env *sandboxtest.Env, c client.Client, job pytorchJob) metav1.Condition {
	t.Helper()
	ns, pods := job.ns, job.workers+1
	job.groupAnnotations = map[string]string{musterv1alpha1.QueueAnnotation: ns}
	for _, name := range []string{"a", "b"} {
		job.name = name
		job.create(t, env, c)
	}
	env.WaitFor(t, "one job running, one waiting for quota", func(context.Context) (bool, error) {
		a, b := stateOf(t, env, ns, "a").holding, stateOf(t, env, ns, "b").holding
		return a+b == pods && (a == 0 || b == 0), nil
	})
	waiting := "b"
	if stateOf(t, env, ns, "b").holding == pods {
		waiting = "a"
	}
	return waitCondition(t, env, c, ns, waiting, "Unschedulable", metav1.ConditionTrue)
}

// TestDRAPodGroupClaim: a native PodGroup's own claim of 2 GPUs (spec.resourceClaims,
// named alike by its 2 members) is allocated once, reserved for the PodGroup, and both
// members run on the node its devices are on.
func TestDRAPodGroupClaim(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	pg, pods := runPodGroupClaimGang(t, env, ns, "drapg", musterOptions{})
	if pods[0].Spec.NodeName != pods[1].Spec.NodeName {
		t.Errorf("members sharing the PodGroup's claim on %s and %s", pods[0].Spec.NodeName, pods[1].Spec.NodeName)
	}
	claim, err := env.Kube.ResourceV1().ResourceClaims(ns).Get(ctx, "domain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := resourcev1.ResourceClaimConsumerReference{APIGroup: schedulingv1beta1.GroupName, Resource: "podgroups", Name: "vit", UID: pg.UID}
	if got := claim.Status.ReservedFor; len(got) != 1 || got[0] != want {
		t.Errorf("claim reserved for %+v, want only %+v", got, want)
	}
	if a := claim.Status.Allocation; a == nil || len(a.Devices.Results) != 2 || a.Devices.Results[0].Pool != pods[0].Spec.NodeName {
		t.Errorf("claim allocation %+v, want 2 devices of node %s", a, pods[0].Spec.NodeName)
	}
}

// runPodGroupClaimGang starts muster with opts on two nodes of two DRA GPUs and runs a
// native PodGroup, vit, of two members that share the PodGroup's own claim, domain, of
// both GPUs of a node.
func runPodGroupClaimGang(t *testing.T, env *sandboxtest.Env, ns, pool string, opts musterOptions) (*schedulingv1beta1.PodGroup, []corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 2, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: "clique-" + pool})
	startMuster(t, env, opts)
	if _, err := env.Kube.ResourceV1().ResourceClaims(ns).Create(ctx, sandboxtest.GPUClaim(ns, "domain", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claimName := "domain"
	pg, err := env.Kube.SchedulingV1beta1().PodGroups(ns).Create(ctx, &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "vit"},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}},
			ResourceClaims:   []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpus", ResourceClaimName: &claimName}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		env.CreatePod(t, sandboxtest.Pod(ns, fmt.Sprintf("vit-%d", i)).SchedulerName("muster").PodGroup("vit").ResourceClaim("gpus", "domain").Obj())
	}
	var pods []corev1.Pod
	env.WaitFor(t, "both members Running", func(ctx context.Context) (bool, error) {
		list, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 2 {
			return false, err
		}
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		pods = list.Items
		return true, nil
	})
	return pg, pods
}

// claimStatusPath is the path of ResourceClaim ns/name's status.
func claimStatusPath(ns, name string) string {
	return "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims/" + name + "/status"
}

// stopPodGroupClaimGang runs runPodGroupClaimGang's gang with muster behind a proxy, gives
// the proxy hook once the gang runs, and stops the gang (muster.dev/stopped on its
// PodGroup): muster evicts it and releases the PodGroup's claim.
func stopPodGroupClaimGang(t *testing.T, env *sandboxtest.Env, ns, pool string, hook sandboxtest.Hook) {
	t.Helper()
	proxy := env.StartProxy(t)
	runPodGroupClaimGang(t, env, ns, pool, musterOptions{proxy: proxy})
	proxy.SetHook(hook)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, musterv1alpha1.StoppedAnnotation)
	if _, err := env.Kube.SchedulingV1beta1().PodGroups(ns).Patch(context.Background(), "vit", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDRAPodGroupClaimReleaseSentAgain: a native PodGroup's gang holds the PodGroup's
// own claim; the user stops the gang, and the API server answers muster's first release
// of the claim 500. muster asks again (10 s later) and the claim ends deallocated and
// reserved for no one; without the second ask it stayed allocated to a group that holds
// no node.
func TestDRAPodGroupClaimReleaseSentAgain(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	hook, writes := refuseFirst(http.MethodPut, claimStatusPath(ns, "domain"), "")
	stopPodGroupClaimGang(t, env, ns, "drarel", hook)
	env.WaitForResourceClaim(t, ns, "domain", "deallocated and reserved for no one", func(c *resourcev1.ResourceClaim) bool {
		return c != nil && c.Status.Allocation == nil && len(c.Status.ReservedFor) == 0
	})
	if n := writes.Load(); n < 2 {
		t.Errorf("the claim was released with %d status writes, want the refused one and another", n)
	}
	t.Logf("claim released after %d status writes, the first answered 500", writes.Load())
}

// TestHeldClaimReleaseDoesNotHoldTheQueue: a native PodGroup's gang holds the
// PodGroup's own claim; the user stops the gang, and the API server holds muster's
// release of the claim. muster binds another pod meanwhile (the release is sent off its
// loop), and once the release is answered the claim is deallocated and reserved for no
// one.
func TestHeldClaimReleaseDoesNotHoldTheQueue(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	h := newHeldRequest(http.MethodPut, claimStatusPath(ns, "domain"), "")
	stopPodGroupClaimGang(t, env, ns, "draheld", h.hook)
	boundWhileHeld(t, env, ns, h, "its release of claim domain")
	close(h.release)
	t.Logf("the held release, released: %d", <-h.answer)
	env.WaitForResourceClaim(t, ns, "domain", "deallocated and reserved for no one", func(c *resourcev1.ResourceClaim) bool {
		return c != nil && c.Status.Allocation == nil && len(c.Status.ReservedFor) == 0
	})
}

// TestDRANarrowClaimFirst: one node of three DRA GPUs; a job of three pods whose master
// and second worker take any GPU and whose first worker takes only gpu-0 (a selector
// on the index). Its claims allocated in the pods' order, the master would take gpu-0
// and the first worker find none: muster tries the claim that selects first, the job
// runs, and the first worker has gpu-0.
func TestDRANarrowClaimFirst(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "narrow", Count: 1, CPU: "32", Memory: "128Gi", DRAGPUs: 3, Clique: ns})
	createTemplate(t, env, ns)
	const gpuZero = "gpu-zero"
	createSelectorTemplate(t, env, ns, gpuZero, fmt.Sprintf("device.attributes[%q].%s == 0", sandbox.DRADriver, sandbox.AttributeIndex))
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	job := pytorchJob{ns: ns, name: "mixed", workers: 2, mutate: func(p *corev1.Pod) {
		draWorker(p)
		if p.Name == "mixed-worker-0" {
			useTemplate(p, gpuZero)
		}
	}}
	job.create(t, env, c)
	pods := waitRunning(t, env, ns, "mixed", 3)
	checkAllocated(t, env, pods)
	for name, claims := range claimsOfPods(t, env, pods) {
		if name == "mixed-worker-0" {
			if got := claims[0].Status.Allocation.Devices.Results[0].Device; got != "gpu-0" {
				t.Errorf("mixed-worker-0 has %s, want gpu-0, the one its claim selects", got)
			}
		}
	}
}

// TestDRAMembersPackTheirNodes: two nodes of two DRA GPUs. A job's pod holds a GPU of
// the second node, and a pod that asks for no GPU most of the first node's cpu. A job
// of one pod asking for one GPU runs beside the first job on the second node, whose
// GPUs are in use, and leaves the first node's two whole, though it has less cpu free.
func TestDRAMembersPackTheirNodes(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "drapack", Count: 2, CPU: "16", Memory: "64Gi", DRAGPUs: 2, Clique: "clique-p"})
	createTemplate(t, env, ns)
	cpuHog(t, env, ns, nodes[0], 12)
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	logPodsOnFailure(t, env, ns)

	onSecond := func(p *corev1.Pod) {
		draWorker(p)
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: nodes[1]}
	}
	(pytorchJob{ns: ns, name: "first", mutate: onSecond}).create(t, env, c)
	waitRunning(t, env, ns, "first", 1)
	(pytorchJob{ns: ns, name: "second", mutate: draWorker}).create(t, env, c)
	if p := waitRunning(t, env, ns, "second", 1)[0]; p.Spec.NodeName != nodes[1] {
		t.Errorf("pod %s on %s, want %s, whose GPUs are in use, not %s's two whole ones", p.Name, p.Spec.NodeName, nodes[1], nodes[0])
	}
}
