package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestPreemptionTimesOutThroughServe: two jobs of priority 0 fill four GPUs, and the
// younger one's pods, once deleted, never go (their kubelet lost them: the sandbox's
// AnnotationLostOnDelete). A job of higher priority preempts the younger job. Its pods
// stay bound; their grace period is 1 s (0 would make the API server delete them at
// once). muster's Configuration sets preemptionSlack to 5m. Muster's clock is moved 6
// minutes on, past the deadline (the grace period and 5 minutes after the eviction):
// muster stops waiting for them, a PreemptionTimedOut Warning event on the preemptor's
// PodGroup names them and the configured slack, and the preemptor preempts the older
// job and runs on its nodes.
func TestPreemptionTimesOutThroughServe(t *testing.T) {
	slack := 5 * time.Minute
	env, ns, urgent, c, m := preemptionClusterWith(t, "preempt-lost", 4, musterOptions{clock: true,
		configure: func(cfg *musterv1alpha1.Configuration) { cfg.PreemptionSlack = &metav1.Duration{Duration: slack} }})
	(pytorchJob{ns: ns, name: "old", workers: 1}).create(t, env, c)
	waitCondition(t, env, c, ns, "old", "PodsReady", metav1.ConditionTrue)
	young := pytorchJob{ns: ns, name: "young", workers: 1,
		annotations: map[string]string{kubelet.AnnotationLostOnDelete: "true"},
		mutate:      func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1) }}
	young.create(t, env, c)
	waitCondition(t, env, c, ns, "young", "PodsReady", metav1.ConditionTrue)
	t.Cleanup(func() { // no kubelet will confirm their deletion: delete them at once
		for _, name := range young.podNames() {
			_ = env.Kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
	})

	(pytorchJob{ns: ns, name: "vip", workers: 1, priorityClass: urgent}).create(t, env, c)
	waitCondition(t, env, c, ns, "young", "Evicted", metav1.ConditionTrue)
	// Before the deadline, vip waits for young's pods to go.
	if note := preemptionTimedOut(t, env, ns); note != "" {
		t.Fatalf("a PreemptionTimedOut event before muster's clock moved: %s", note)
	}
	m.AdvanceClock(t, slack+time.Minute)
	var note string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(context.Context) (bool, error) {
		note = preemptionTimedOut(t, env, ns)
		return note != "", nil
	})
	if err != nil {
		t.Fatalf("waiting for a PreemptionTimedOut event on vip once muster's clock was %s past young's eviction: %v", slack+time.Minute, err)
	}
	if !strings.HasPrefix(note, "Warning: ") || !strings.Contains(note, ns+"/young-master-0") || !strings.Contains(note, "still hold 2 pod(s)") ||
		!strings.Contains(note, "grace period and "+slack.String()) {
		t.Errorf("PreemptionTimedOut event %q: want a Warning naming %s/young-master-0, its 2 pods and the slack %s", note, ns, slack)
	}
	if cond := waitCondition(t, env, c, ns, "old", "Evicted", metav1.ConditionTrue); cond.Reason != "Preempted" {
		t.Errorf("old: expected Evicted by preemption once vip stopped waiting for young, found %s: %s", cond.Reason, cond.Message)
	}
	waitCondition(t, env, c, ns, "vip", "PodsReady", metav1.ConditionTrue)
	if s := stateOf(t, env, ns, "young"); s.total != 2 {
		t.Errorf("young: expected its 2 pods still there, terminating, found %d", s.total)
	}
}

// preemptionTimedOut returns the type and note of muster's PreemptionTimedOut event on
// vip in ns, or "" when there is none.
func preemptionTimedOut(t *testing.T, env *sandboxtest.Env, ns string) string {
	t.Helper()
	list, err := env.Kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the events of %s: %v", ns, err)
	}
	for _, ev := range list.Items {
		if ev.ReportingController == "muster" && ev.Regarding.Name == "vip" && ev.Reason == "PreemptionTimedOut" {
			return ev.Type + ": " + ev.Note
		}
	}
	return ""
}
