package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestReclaimWithinCohort: two Queues of 2 GPUs share a cohort. Team a runs two jobs of
// 2 GPUs, the second on team b's idle quota; a job of team b, of lower priority than
// both, takes its quota back: the job of team a admitted last is evicted whole (reason
// Preempted, quota reclaimed) and waits on its cohort, the first is spared, and team
// b's job runs.
func TestReclaimWithinCohort(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "cohort", Count: 6, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	teamA, teamB, cohort := ns+"-a", ns+"-b", ns
	inCohort := func(q *musterv1alpha1.Queue) { q.Spec.Cohort = cohort }
	quickRetry := func(q *musterv1alpha1.Queue) {
		q.Spec.Defaults = &musterv1alpha1.GroupPolicy{BackoffBase: &metav1.Duration{Duration: time.Second}}
	}
	createQueue(t, c, teamA, 2, nil, inCohort, quickRetry)
	createQueue(t, c, teamB, 2, nil, inCohort)
	important := ns + "-important"
	createPriorityClass(t, env, important, 1000, corev1.PreemptLowerPriority)
	startMuster(t, env, musterOptions{})
	inQueue := func(q string) map[string]string { return map[string]string{musterv1alpha1.QueueAnnotation: q} }

	a1 := pytorchJob{ns: ns, name: "a1", workers: 1, priorityClass: important, groupAnnotations: inQueue(teamA)}
	a2 := a1
	a2.name = "a2"
	for _, j := range []pytorchJob{a1, a2} {
		j.create(t, env, c)
		waitCondition(t, env, c, ns, j.name, "PodsReady", metav1.ConditionTrue)
	}
	wantQueueStatus(t, env, c, teamA, 2, 0, 4)
	wantBorrowed(t, env, c, teamA, 2)
	wantBorrowed(t, env, c, teamB, 0)

	(pytorchJob{ns: ns, name: "b1", workers: 1, groupAnnotations: inQueue(teamB)}).create(t, env, c)
	evicted := waitCondition(t, env, c, ns, "a2", "Evicted", metav1.ConditionTrue)
	want := "reclaimed by queue " + teamB + " of cohort " + cohort
	if evicted.Reason != "Preempted" || !strings.Contains(evicted.Message, want) {
		t.Errorf("a2's Evicted condition: expected Preempted with %q, found %s: %q", want, evicted.Reason, evicted.Message)
	}
	waitCondition(t, env, c, ns, "b1", "PodsReady", metav1.ConditionTrue)
	if cond, _ := groupCondition(t, c, ns, "a1", "Evicted"); cond.Status == metav1.ConditionTrue {
		t.Errorf("a1: expected it spared, found Evicted: %s: %s", cond.Reason, cond.Message)
	}
	// The operator creates a2's pods again once they are gone: the group waits on its
	// cohort, holding nothing.
	env.WaitFor(t, "a2's pods gone", func(context.Context) (bool, error) { return stateOf(t, env, ns, "a2").total == 0, nil })
	a2.createPods(t, env)
	waiting := waitCondition(t, env, c, ns, "a2", "Unschedulable", metav1.ConditionTrue)
	if waiting.Reason != "QuotaExceeded" || !strings.Contains(waiting.Message, "cohort "+cohort+" has 4 of 4 in use") {
		t.Errorf("a2: expected it to wait on its cohort's quota, found %s: %q", waiting.Reason, waiting.Message)
	}
	if s := stateOf(t, env, ns, "a2"); s.holding != 0 {
		t.Errorf("a2: expected no pod holding a node while it waits, found %d", s.holding)
	}
	wantQueueStatus(t, env, c, teamA, 1, 1, 2)
	wantQueueStatus(t, env, c, teamB, 1, 0, 2)
	wantBorrowed(t, env, c, teamA, 0)
}

// wantBorrowed waits until a Queue's status.borrowed shows gpus GPUs, and nothing else
// (absent when gpus is 0).
func wantBorrowed(t *testing.T, env *sandboxtest.Env, c client.Client, name string, gpus int64) {
	t.Helper()
	var last corev1.ResourceList
	env.WaitFor(t, fmt.Sprintf("Queue %s status.borrowed: %d GPUs", name, gpus), func(ctx context.Context) (bool, error) {
		q := &musterv1alpha1.Queue{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, q); err != nil {
			return false, fmt.Errorf("reading Queue %s: %w", name, err)
		}
		last = q.Status.Borrowed
		if gpus == 0 {
			return len(last) == 0, nil
		}
		v := last[sandbox.ResourceGPU]
		return len(last) == 1 && v.Value() == gpus, nil
	})
	t.Logf("Queue %s status.borrowed: %v", name, last)
}

// TestBorrowingLimitRequiresACohort: the API server refuses a Queue that may borrow, or
// that limits what it lends, but names no cohort, naming the fields.
func TestBorrowingLimitRequiresACohort(t *testing.T) {
	env := sandboxtest.Shared(t)
	c := newClient(t, env.Config)
	two := corev1.ResourceList{sandbox.ResourceGPU: resource.MustParse("2")}
	for field, spec := range map[string]musterv1alpha1.QueueSpec{
		"borrowingLimit": {BorrowingLimit: two},
		"lendingLimit":   {LendingLimit: two},
	} {
		q := &musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace(t) + "-lonely"}, Spec: spec}
		err := c.Create(context.Background(), q)
		if err == nil {
			_ = c.Delete(context.Background(), q)
			t.Errorf("%s: expected the Queue refused, it was created", field)
			continue
		}
		if !strings.Contains(err.Error(), "spec."+field+" requires spec.cohort") {
			t.Errorf("%s: expected the error to name spec.%s and spec.cohort, found: %v", field, field, err)
		}
	}
}
