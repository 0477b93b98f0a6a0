package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestExtendedResourceBackedByDRAThroughServe: a DeviceClass names an extended resource
// that no node has, example.com/<namespace>-gpu, as the one its DRA devices provide. A
// job whose pods request it waits, and its condition says that muster does not allocate
// extended resources backed by DRA, naming the resource and the class.
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

	asks := func(p *corev1.Pod) {
		r := &p.Spec.Containers[0].Resources
		delete(r.Requests, sandbox.ResourceGPU)
		delete(r.Limits, sandbox.ResourceGPU)
		r.Requests[res], r.Limits[res] = resource.MustParse("1"), resource.MustParse("1")
	}
	(pytorchJob{ns: ns, name: "ext", workers: 1, mutate: asks}).create(t, env, c)
	want := string(res) + " is provided through DRA by DeviceClass " + class.Name
	env.WaitFor(t, "the job's condition to name the DRA-backed resource", func(context.Context) (bool, error) {
		cond, ok := groupCondition(t, c, ns, "ext", "Impossible")
		return ok && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, want), nil
	})
	if got := stateOf(t, env, ns, "ext").holding; got != 0 {
		t.Fatalf("the waiting job holds %d pods", got)
	}
	// The reason reaches muster explain as data, from the group's record: its fix asks
	// for a ResourceClaim of the class.
	f, err := explain.Gather(context.Background(), explain.NewClients(env.Kube, env.Dynamic), "podgroup/ext", ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r := explain.Build(f)
	if want := "ask for the devices with a ResourceClaim of DeviceClass " + class.Name + " in place of resources.requests[" + string(res) + "]"; r.Verdict.Step != 4 || !strings.Contains(r.Verdict.Fix, want) {
		t.Errorf("explain's verdict: step %d, fix %q; want step 4 and a fix containing %q", r.Verdict.Step, r.Verdict.Fix, want)
	}
}
