package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// createPriorityClass creates a PriorityClass and deletes it when the test ends.
func createPriorityClass(t *testing.T, env *sandboxtest.Env, name string, value int32, policy corev1.PreemptionPolicy) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, PreemptionPolicy: &policy}
	if _, err := env.Kube.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PriorityClass %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := env.Kube.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting PriorityClass %s: %v", name, err)
		}
	})
}

// preemptionCluster starts a namespace, a pool of n one-GPU nodes and muster, with a
// PriorityClass of value 1000 that may preempt, and returns them with a client.
func preemptionCluster(t *testing.T, pool string, n int) (env *sandboxtest.Env, ns, urgent string, c client.Client) {
	t.Helper()
	env, ns, urgent, c, _ = preemptionClusterWith(t, pool, n, musterOptions{})
	return env, ns, urgent, c
}

// preemptionClusterWith is preemptionCluster with muster started with o, and returned.
func preemptionClusterWith(t *testing.T, pool string, n int, o musterOptions) (env *sandboxtest.Env, ns, urgent string, c client.Client, m *muster) {
	t.Helper()
	env = sandboxtest.Shared(t)
	ns = env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: n, CPU: "16", Memory: "64Gi", GPUs: 1})
	c = newClient(t, env.Config)
	urgent = ns + "-urgent"
	createPriorityClass(t, env, urgent, 1000, corev1.PreemptLowerPriority)
	m = startMuster(t, env, o)
	return env, ns, urgent, c, m
}

// TestPreemptionEvictsTheFewestLowerPriorityGroups: two jobs of priority 0 fill four
// GPUs. A job of a PriorityClass whose preemptionPolicy is Never waits; a job of a
// higher-priority class that may preempt evicts the younger job whole, and only it,
// and runs on its nodes. The preempted group reports Evicted with reason Preempted.
func TestPreemptionEvictsTheFewestLowerPriorityGroups(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "preempt", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	polite, urgent := ns+"-polite", ns+"-urgent"
	createPriorityClass(t, env, polite, 1000, corev1.PreemptNever)
	createPriorityClass(t, env, urgent, 1000, corev1.PreemptLowerPriority)
	startMuster(t, env, musterOptions{})

	old := pytorchJob{ns: ns, name: "old", workers: 1}
	old.create(t, env, c)
	waitCondition(t, env, c, ns, "old", "PodsReady", metav1.ConditionTrue)
	young := pytorchJob{ns: ns, name: "young", workers: 1}
	young.create(t, env, c)
	waitCondition(t, env, c, ns, "young", "PodsReady", metav1.ConditionTrue)

	(pytorchJob{ns: ns, name: "waits", workers: 1, priorityClass: polite}).create(t, env, c)
	waitCondition(t, env, c, ns, "waits", "Unschedulable", metav1.ConditionTrue)

	(pytorchJob{ns: ns, name: "vip", workers: 1, priorityClass: urgent}).create(t, env, c)
	evicted := waitCondition(t, env, c, ns, "young", "Evicted", metav1.ConditionTrue)
	if evicted.Reason != "Preempted" || !strings.Contains(evicted.Message, "preempted by Coscheduling/"+ns+"/vip (priority 1000)") {
		t.Errorf("young's Evicted condition: expected Preempted by vip, found %s: %q", evicted.Reason, evicted.Message)
	}
	waitCondition(t, env, c, ns, "vip", "PodsReady", metav1.ConditionTrue)
	if cond, _ := groupCondition(t, c, ns, "old", "Evicted"); cond.Status == metav1.ConditionTrue {
		t.Errorf("old: expected it spared, found Evicted: %s: %s", cond.Reason, cond.Message)
	}
	if s := stateOf(t, env, ns, "old"); s.holding != 2 {
		t.Errorf("old: expected its 2 pods kept, found %d holding", s.holding)
	}
	if s := stateOf(t, env, ns, "young"); s.holding != 0 {
		t.Errorf("young: expected no pod left holding a node, found %d", s.holding)
	}
	if s := stateOf(t, env, ns, "waits"); s.holding != 0 {
		t.Errorf("waits (preemptionPolicy Never): expected it still waiting, found %d pods holding", s.holding)
	}
}

// TestPreemptionsInFlightAtOnce: two jobs of priority 0 fill four GPUs, and their
// containers take 15 s to stop once deleted (a checkpoint on SIGTERM). Two jobs of a
// higher priority arrive: each preempts one of them at once, the second without waiting
// for the first's victim to stop, and both run once their victims are gone.
func TestPreemptionsInFlightAtOnce(t *testing.T) {
	env, ns, urgent, c := preemptionCluster(t, "preempt-two", 4)

	slow := map[string]string{kubelet.AnnotationStopAfter: "15s"}
	for _, name := range []string{"a", "b"} {
		(pytorchJob{ns: ns, name: name, workers: 1, annotations: slow}).create(t, env, c)
		waitCondition(t, env, c, ns, name, "PodsReady", metav1.ConditionTrue)
	}
	for _, name := range []string{"vip1", "vip2"} {
		(pytorchJob{ns: ns, name: name, workers: 1, priorityClass: urgent}).create(t, env, c)
	}
	for _, name := range []string{"a", "b"} {
		if cond := waitCondition(t, env, c, ns, name, "Evicted", metav1.ConditionTrue); cond.Reason != "Preempted" {
			t.Errorf("%s: expected Evicted by preemption, found %s: %s", name, cond.Reason, cond.Message)
		}
	}
	// Both victims are still stopping: neither preemption waited for the other's.
	for _, name := range []string{"a", "b"} {
		if s := stateOf(t, env, ns, name); s.total != 2 {
			t.Errorf("%s: expected its 2 pods still terminating when both groups are preempted, found %d", name, s.total)
		}
	}
	for _, name := range []string{"vip1", "vip2"} {
		waitCondition(t, env, c, ns, name, "PodsReady", metav1.ConditionTrue)
	}
}
