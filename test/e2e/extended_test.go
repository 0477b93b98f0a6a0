package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestExtendedResourceBackedByDRAThroughServe: a DeviceClass names an extended resource
// that no node has, example.com/<namespace>-gpu, as the one its DRA devices provide
// (KEP-5004, GA in Kubernetes 1.37). On a node with two such devices, a job of two
// pods (master and worker) asking for one each runs: muster serve made each pod a claim
// for it, as kube-scheduler does (annotated, controlled by the pod), allocated one
// device of the pod's node, no device twice, reserved for the pod, and named it in the
// pod's status.extendedResourceClaimStatus, which the kubelet admits the pod with. A job
// asking for three per pod can never fit, and its condition names the resource and
// the class.
func TestExtendedResourceBackedByDRAThroughServe(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "dra-ext", Count: 1, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: "clique-x"})
	res, class := createExtendedClass(t, env, ns)
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	logPodsOnFailure(t, env, ns)

	(pytorchJob{ns: ns, name: "ext", workers: 1, mutate: asks(res, "1")}).create(t, env, c)
	checkExtendedClaims(t, env, res, waitRunning(t, env, ns, "ext", 2))

	(pytorchJob{ns: ns, name: "big", mutate: asks(res, "3")}).create(t, env, c)
	want := string(res) + " is provided through DRA by DeviceClass " + class.Name
	env.WaitFor(t, "the big job's condition to name the DRA-backed resource", func(context.Context) (bool, error) {
		cond, ok := groupCondition(t, c, ns, "big", "Impossible")
		return ok && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, want), nil
	})
	if got := stateOf(t, env, ns, "big").holding; got != 0 {
		t.Fatalf("the waiting job holds %d pods", got)
	}
}

// TestExtendedResourceOnMixedNodesThroughServe: a cluster moving its GPUs from the
// device plugin to DRA. One node has 2 nvidia.com/gpu in its allocatable, one
// publishes 2 GPUs through DRA, and a DeviceClass names nvidia.com/gpu as the resource
// its devices provide. A job of four one-GPU pods that declares an hour runs on both:
// the pods on the device plugin's node have no claim, those on the DRA node one device
// each. A job of three behind it needs GPUs of both nodes, and muster serve, as
// deployed, writes in its record that it is expected to start in an hour, when the
// first job ends (before, the forecast counted the device plugin's node only, and the
// start was unknown).
func TestExtendedResourceOnMixedNodesThroughServe(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	plugin := env.CreateNodes(t, sandbox.NodePool{Name: "mixed-dp", Count: 1, CPU: "32", Memory: "128Gi", GPUs: 2})[0]
	env.CreateNodes(t, sandbox.NodePool{Name: "mixed-dra", Count: 1, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: "clique-m"})
	createClassProviding(t, env, ns+"-gpu", sandbox.ResourceGPU)
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	logPodsOnFailure(t, env, ns)

	created := time.Now()
	hour := map[string]string{engine.AnnotationExpectedRuntime: "1h"}
	(pytorchJob{ns: ns, name: "running", workers: 3, annotations: hour}).create(t, env, c)
	var onDRA []corev1.Pod
	for _, p := range waitRunning(t, env, ns, "running", 4) {
		if p.Spec.NodeName != plugin {
			onDRA = append(onDRA, p)
		} else if p.Status.ExtendedResourceClaimStatus != nil {
			t.Errorf("pod %s on the device plugin's node %s: extendedResourceClaimStatus %+v, want none", p.Name, plugin, p.Status.ExtendedResourceClaimStatus)
		}
	}
	if len(onDRA) != 2 {
		t.Fatalf("%d pods of 4 on the DRA node, want 2", len(onDRA))
	}
	checkExtendedClaims(t, env, sandbox.ResourceGPU, onDRA)
	waitCondition(t, env, c, ns, "running", "PodsReady", metav1.ConditionTrue)
	(pytorchJob{ns: ns, name: "queued", workers: 2, annotations: map[string]string{engine.AnnotationExpectedRuntime: "30m"}}).create(t, env, c)

	expectQueuedToStartAt(t, env, m, c, ns, "queued", created.Add(time.Hour))
}

// TestQuotaOfDeviceClassHoldsForExtendedResources: a Queue's quota names 2 devices of
// a DeviceClass that provides example.com/<namespace>-gpu, which no node has, through
// DRA. On a node of four such devices, of two jobs of two pods asking for one each, one
// runs and the other waits for the quota: muster serve charges the requests as devices
// of the class (before, they went past the quota of the class).
func TestQuotaOfDeviceClassHoldsForExtendedResources(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "ext-quota", Count: 1, CPU: "32", Memory: "128Gi", DRAGPUs: 4, Clique: "clique-xq"})
	res, class := createExtendedClass(t, env, ns)
	c := newClient(t, env.Config)
	createQueue(t, c, ns, 0, nil, func(q *musterv1alpha1.Queue) {
		q.Spec.Quota = corev1.ResourceList{corev1.ResourceName(class.Name): resourceQuantity(2)}
	})
	startMuster(t, env, musterOptions{})
	logPodsOnFailure(t, env, ns)

	cond := oneRunsOneWaitsForQuota(t, env, c, pytorchJob{ns: ns, workers: 1, mutate: asks(res, "1")})
	if !strings.Contains(cond.Message, "quota") || !strings.Contains(cond.Message, class.Name) {
		t.Fatalf("the waiting job's condition %+v does not name the quota of %s", cond, class.Name)
	}
}

// createExtendedClass creates a DeviceClass of the sandbox's DRA GPUs that names
// example.com/<ns>-gpu as the extended resource it provides, deleted at the test's end.
func createExtendedClass(t *testing.T, env *sandboxtest.Env, ns string) (corev1.ResourceName, *resourcev1.DeviceClass) {
	t.Helper()
	res := corev1.ResourceName("example.com/" + ns + "-gpu")
	return res, createClassProviding(t, env, ns+"-gpu", res)
}

// createClassProviding creates DeviceClass name of the sandbox's DRA GPUs that names
// res as the extended resource it provides, deleted at the test's end.
func createClassProviding(t *testing.T, env *sandboxtest.Env, name string, res corev1.ResourceName) *resourcev1.DeviceClass {
	t.Helper()
	classes := env.Kube.ResourceV1().DeviceClasses()
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{
			Selectors:            []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + sandbox.DRADriver + `"`}}},
			ExtendedResourceName: ptr.To(string(res)),
		},
	}
	if _, err := classes.Create(context.Background(), class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = classes.Delete(context.Background(), class.Name, metav1.DeleteOptions{}) })
	return class
}

// logPodsOnFailure logs, when t fails, the Events of namespace ns and its pods' nodes,
// phases, conditions and claims for extended resources.
func logPodsOnFailure(t *testing.T, env *sandboxtest.Env, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		evs, _ := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		for _, e := range evs.Items {
			t.Logf("event %s %s %s: %s", e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
		pods, _ := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			t.Logf("pod %s on %q, %s, extendedResourceClaimStatus %+v, conditions %+v", p.Name, p.Spec.NodeName,
				p.Status.Phase, p.Status.ExtendedResourceClaimStatus, p.Status.Conditions)
		}
	})
}

// asks makes a job's pod ask for n of res instead of its GPU.
func asks(res corev1.ResourceName, n string) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		r := &p.Spec.Containers[0].Resources
		delete(r.Requests, sandbox.ResourceGPU)
		delete(r.Limits, sandbox.ResourceGPU)
		r.Requests[res], r.Limits[res] = resource.MustParse(n), resource.MustParse(n)
	}
}

// checkExtendedClaims checks that each pod runs with the claim muster made for its
// extended resource res: named in its status, annotated and controlled by it, allocated
// one device of its node, reserved for it; and that no device is given twice.
func checkExtendedClaims(t *testing.T, env *sandboxtest.Env, res corev1.ResourceName, pods []corev1.Pod) {
	t.Helper()
	seen := map[string]string{}
	for _, p := range pods {
		s := p.Status.ExtendedResourceClaimStatus
		if s == nil || s.ResourceClaimName != kubefit.ExtendedClaimName(&p) || len(s.RequestMappings) != 1 ||
			s.RequestMappings[0].ResourceName != string(res) {
			t.Fatalf("pod %s: extendedResourceClaimStatus %+v", p.Name, s)
		}
		claim, err := env.Kube.ResourceV1().ResourceClaims(p.Namespace).Get(context.Background(), s.ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !kubefit.IsExtendedClaimOf(claim, &p) {
			t.Errorf("claim %s: annotations %v, owners %+v; want the extended resources' claim of %s", claim.Name, claim.Annotations, claim.OwnerReferences, p.Name)
		}
		a := claim.Status.Allocation
		if a == nil || len(a.Devices.Results) != 1 || len(claim.Status.ReservedFor) != 1 || claim.Status.ReservedFor[0].UID != p.UID {
			t.Fatalf("claim %s: allocation %+v, reserved for %+v; want one device, reserved for %s", claim.Name, a, claim.Status.ReservedFor, p.Name)
		}
		d := a.Devices.Results[0]
		if d.Pool != p.Spec.NodeName || seen[d.Pool+"/"+d.Device] != "" {
			t.Errorf("pod %s on %s has device %s/%s (already %q's)", p.Name, p.Spec.NodeName, d.Pool, d.Device, seen[d.Pool+"/"+d.Device])
		}
		seen[d.Pool+"/"+d.Device] = p.Name
	}
}

// TestExtendedClaimsCrashBetweenClaimsAndBinds: muster is killed after it made some
// members' claims for their extended resource backed by DRA: with 2 members bound (the
// restarted muster deletes the claims of the members it did not bind and completes the
// plan, allocating theirs anew on their planned nodes), and with none bound (it deletes
// those claims and places the gang anew). Either way every pod runs with its own claim,
// and no device is given twice.
func TestExtendedClaimsCrashBetweenClaimsAndBinds(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "extcrash", Count: 2, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: "clique-e"})
	c := newClient(t, env.Config)
	for _, held := range []int32{2, 0} {
		t.Run(fmt.Sprintf("%d bound", held), func(t *testing.T) {
			ns := env.Namespace(t)
			res, _ := createExtendedClass(t, env, ns)
			logPodsOnFailure(t, env, ns)
			job := pytorchJob{ns: ns, name: "gang", workers: 3, plain: true, mutate: asks(res, "1")}
			killAfterClaims(t, env, c, held, job)
			list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			boundBefore := map[types.UID]string{}
			for _, p := range list.Items {
				if p.Spec.NodeName != "" {
					boundBefore[p.UID] = p.Name
				}
			}
			startMuster(t, env, musterOptions{})
			pods := waitRunning(t, env, ns, "gang", 4)
			checkExtendedClaims(t, env, res, pods)
			// The plan was completed, not undone: the members bound before the kill run.
			for _, p := range pods {
				delete(boundBefore, p.UID)
			}
			if len(boundBefore) != 0 {
				t.Errorf("members bound before the kill and not running after: %v", boundBefore)
			}
		})
	}
}
