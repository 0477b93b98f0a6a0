package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestPreemptionForDevicesThroughServe: on 2 nodes of 2 DRA GPUs each, two jobs of
// priority 0 hold all four devices through one-GPU claims made from a template. A job of
// a higher-priority class that needs two devices evicts the younger job whole, and only
// it; once its pods are gone and the resourceclaim controller has deallocated their
// claims, the urgent job runs with its claims allocated on its pods' nodes.
func TestPreemptionForDevicesThroughServe(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "dra-preempt", Count: 2, CPU: "32", Memory: "128Gi", DRAGPUs: 2, Clique: "clique-p"})
	createTemplate(t, env, ns)
	c := newClient(t, env.Config)
	urgent := ns + "-urgent"
	createPriorityClass(t, env, urgent, 1000, corev1.PreemptLowerPriority)
	startMuster(t, env, musterOptions{})

	for _, name := range []string{"old", "young"} {
		(pytorchJob{ns: ns, name: name, workers: 1, mutate: draWorker}).create(t, env, c)
		waitCondition(t, env, c, ns, name, "PodsReady", metav1.ConditionTrue)
	}
	(pytorchJob{ns: ns, name: "vip", workers: 1, priorityClass: urgent, mutate: draWorker}).create(t, env, c)
	evicted := waitCondition(t, env, c, ns, "young", "Evicted", metav1.ConditionTrue)
	if evicted.Reason != "Preempted" || !strings.Contains(evicted.Message, "preempted by Coscheduling/"+ns+"/vip (priority 1000)") {
		t.Errorf("young's Evicted condition: expected Preempted by vip, found %s: %q", evicted.Reason, evicted.Message)
	}
	checkAllocated(t, env, waitRunning(t, env, ns, "vip", 2))
	if cond, _ := groupCondition(t, c, ns, "old", "Evicted"); cond.Status == metav1.ConditionTrue {
		t.Errorf("old: expected it spared, found Evicted: %s: %s", cond.Reason, cond.Message)
	}
	if s := stateOf(t, env, ns, "old"); s.holding != 2 {
		t.Errorf("old: expected its 2 pods kept, found %d holding", s.holding)
	}
}
