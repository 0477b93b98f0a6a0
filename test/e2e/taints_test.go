package e2e

import (
	"context"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestDeviceTaintRuleThroughServe: on 2 nodes of 2 DRA GPUs each, an administrator
// drains the first node's GPUs with a DeviceTaintRule (NoSchedule). A gang of 3 one-GPU
// workers, which would fit the 4 GPUs, waits (Unschedulable, not Impossible: the taint
// is for a while) with the plugin's reason and holds nothing; when the rule is deleted
// it runs, each claim allocated on its pod's node.
func TestDeviceTaintRuleThroughServe(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "dra-taint", Count: 2, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: "clique-t"})
	createTemplate(t, env, ns)
	rules := env.Kube.ResourceV1().DeviceTaintRules()
	rule := drain(t, env, ns+"-drain", resourcev1.DeviceTaintSelector{Driver: ptr.To(sandbox.DRADriver), Pool: ptr.To(nodes[0])})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})

	(pytorchJob{ns: ns, name: "train", workers: 2, mutate: draWorker}).create(t, env, c)
	want := "cannot allocate all claims"
	env.WaitFor(t, "train waiting for untainted devices", func(context.Context) (bool, error) {
		cond, ok := groupCondition(t, c, ns, "train", "Unschedulable")
		return ok && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, want), nil
	})
	if got := stateOf(t, env, ns, "train").holding; got != 0 {
		t.Fatalf("the waiting gang holds %d pods", got)
	}
	if err := rules.Delete(context.Background(), rule.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	checkAllocated(t, env, waitRunning(t, env, ns, "train", 3))
}

// TestDrainedDevicesDoNotMakeANodeEmptier: on 2 nodes of 2 DRA GPUs each, an
// administrator drains one GPU of the first with a DeviceTaintRule, and a cpu-heavy pod
// runs on the second. A one-GPU job runs on the first node, whose one GPU left is the
// fewest a node can give it, and leaves the second's two for a job that needs both.
// (Drained devices counted as free: the two nodes looked alike, and the job went to the
// second, which had less cpu free.) A job whose claim tolerates the drain can have both
// GPUs of either node, and runs on the second, with less cpu free. (Drained devices
// counted for no claim: it went to the first.)
func TestDrainedDevicesDoNotMakeANodeEmptier(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tolerant bool
		want     int
	}{{"one", false, 0}, {"tolerant", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			env := sandboxtest.Shared(t)
			ns := env.Namespace(t)
			nodes := env.CreateNodes(t, sandbox.NodePool{Name: "drainpack-" + tc.name, Count: 2, CPU: "16", Memory: "64Gi", DRAGPUs: 2, Clique: "clique-d"})
			tmpl := sandboxtest.GPUClaimTemplate(ns, oneGPU, 1)
			if tc.tolerant {
				tmpl.Spec.Spec.Devices.Requests[0].Exactly.Tolerations = []resourcev1.DeviceToleration{{Key: maintenanceTaint, Operator: resourcev1.DeviceTolerationOpExists}}
			}
			if _, err := env.Kube.ResourceV1().ResourceClaimTemplates(ns).Create(context.Background(), tmpl, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			drain(t, env, ns+"-drain-one", resourcev1.DeviceTaintSelector{Driver: ptr.To(sandbox.DRADriver), Pool: ptr.To(nodes[0]), Device: ptr.To("gpu-0")})
			cpuHog(t, env, ns, nodes[1], 12)
			c := newClient(t, env.Config)
			startMuster(t, env, musterOptions{})
			logPodsOnFailure(t, env, ns)

			(pytorchJob{ns: ns, name: "one", mutate: draWorker}).create(t, env, c)
			if p := waitRunning(t, env, ns, "one", 1)[0]; p.Spec.NodeName != nodes[tc.want] {
				t.Errorf("pod %s on %s, want %s", p.Name, p.Spec.NodeName, nodes[tc.want])
			}
		})
	}
}

// maintenanceTaint is the key of the taint drain puts on devices.
const maintenanceTaint = "example.com/maintenance"

// drain creates DeviceTaintRule name, which taints the devices sel selects NoSchedule
// (an administrator's maintenance), deleted when the test ends.
func drain(t *testing.T, env *sandboxtest.Env, name string, sel resourcev1.DeviceTaintSelector) *resourcev1.DeviceTaintRule {
	t.Helper()
	rules := env.Kube.ResourceV1().DeviceTaintRules()
	rule := &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &sel,
			Taint:          resourcev1.DeviceTaint{Key: maintenanceTaint, Effect: resourcev1.DeviceTaintEffectNoSchedule},
		},
	}
	if _, err := rules.Create(context.Background(), rule, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rules.Delete(context.Background(), rule.Name, metav1.DeleteOptions{}) })
	return rule
}
