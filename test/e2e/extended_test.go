package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestExtendedResourceBackedByDRAThroughServe: a DeviceClass names an extended resource
// that no node has, example.com/<namespace>-gpu, as the one its DRA devices provide
// (KEP-5004, GA in Kubernetes 1.37). On a node with two such devices, a job of two
// pods (master and worker) asking for one each runs: muster serve made each worker a claim for it, as
// kube-scheduler does (annotated, controlled by the pod), allocated one device of the
// pod's node, no device twice, reserved for the pod, and named it in the pod's
// status.extendedResourceClaimStatus, which the kubelet admits the pod with. A job
// asking for three per pod can never fit, and its condition names the resource and
// the class.
func TestExtendedResourceBackedByDRAThroughServe(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "dra-ext", Count: 1, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: "clique-x"})
	res := corev1.ResourceName("example.com/" + ns + "-gpu")
	classes := env.Kube.ResourceV1().DeviceClasses()
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-gpu"},
		Spec: resourcev1.DeviceClassSpec{
			Selectors:            []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + sandbox.DRADriver + `"`}}},
			ExtendedResourceName: ptr.To(string(res)),
		},
	}
	if _, err := classes.Create(context.Background(), class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = classes.Delete(context.Background(), class.Name, metav1.DeleteOptions{}) })
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		evs, _ := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		for _, e := range evs.Items {
			t.Logf("event %s %s %s: %s", e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
		ps, _ := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		for _, p := range ps.Items {
			t.Logf("pod %s node %q phase %s ext %+v conds %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.ExtendedResourceClaimStatus, p.Status.Conditions)
		}
	})

	asks := func(n string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			r := &p.Spec.Containers[0].Resources
			delete(r.Requests, sandbox.ResourceGPU)
			delete(r.Limits, sandbox.ResourceGPU)
			r.Requests[res], r.Limits[res] = resource.MustParse(n), resource.MustParse(n)
		}
	}
	(pytorchJob{ns: ns, name: "ext", workers: 1, mutate: asks("1")}).create(t, env, c)
	pods := waitRunning(t, env, ns, "ext", 2)
	seen := map[string]string{}
	for _, p := range pods {
		s := p.Status.ExtendedResourceClaimStatus
		if s == nil || s.ResourceClaimName != kubefit.ExtendedClaimName(&p) || len(s.RequestMappings) != 1 ||
			s.RequestMappings[0].ResourceName != string(res) {
			t.Fatalf("pod %s: extendedResourceClaimStatus %+v", p.Name, s)
		}
		claim, err := env.Kube.ResourceV1().ResourceClaims(ns).Get(context.Background(), s.ResourceClaimName, metav1.GetOptions{})
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
		if d.Pool != p.Spec.NodeName || seen[d.Device] != "" {
			t.Errorf("pod %s on %s has device %s/%s (already %q's)", p.Name, p.Spec.NodeName, d.Pool, d.Device, seen[d.Device])
		}
		seen[d.Device] = p.Name
	}

	(pytorchJob{ns: ns, name: "big", mutate: asks("3")}).create(t, env, c)
	want := string(res) + " is provided through DRA by DeviceClass " + class.Name
	env.WaitFor(t, "the big job's condition to name the DRA-backed resource", func(context.Context) (bool, error) {
		cond, ok := groupCondition(t, c, ns, "big", "Impossible")
		return ok && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, want), nil
	})
	if got := stateOf(t, env, ns, "big").holding; got != 0 {
		t.Fatalf("the waiting job holds %d pods", got)
	}
}
