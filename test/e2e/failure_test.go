package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestImpossibleShape: a pod needing 8 GPUs where nodes have 4 is Impossible at once,
// with the numbers, and is not retried.
func TestImpossibleShape(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "four", Count: 2, CPU: "32", Memory: "128Gi", GPUs: 4})
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	job := pytorchJob{ns: ns, name: "huge", workers: 0, gpus: map[string]int64{"huge-master-0": 8}}
	ctx := context.Background()
	job.create(t, env, c)
	// "At once": on the pass that sees the group, with no timer involved; muster's
	// clock is not advanced until it is Impossible.
	cond := waitCondition(t, env, c, ns, "huge", "Impossible", metav1.ConditionTrue)
	for _, want := range []string{"needs 8 nvidia.com/gpu", "has 4"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Impossible message %q: expected it to contain %q", cond.Message, want)
		}
	}
	// A retry on a timer would come by the time every timer a group can have fired:
	// move muster's clock past them all; it returns once muster's loop has passed at
	// the new time.
	m.AdvanceClock(t, m.pastEveryTimer())
	if rec := lifecycleOf(t, c, ns, "huge"); rec.Phase != "Impossible" || rec.Attempt != 0 {
		t.Errorf("after every timer: expected the group Impossible with no attempt, found %s, attempt %d: %s", rec.Phase, rec.Attempt, rec.Message)
	}
	events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Reason, "Evict") || ev.Reason == "StartTimeout" {
			t.Errorf("expected no eviction of an Impossible group, found event %s: %s", ev.Reason, ev.Message)
		}
	}
	got, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "huge-master-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "" {
		t.Errorf("expected the pod unbound, found it on %s", got.Spec.NodeName)
	}
}

// TestWorkerFailsToInitialise: one worker never initialises. The group is evicted at
// its start timeout, backs off, is retried, and Fails after max-retries; its plain pods
// are recreated by muster each time. Meanwhile another group runs.
func TestWorkerFailsToInitialise(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "init", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	m := startMuster(t, env, musterOptions{clock: true})
	flaky := flakyJob(ns, flakyBackoff)
	flaky.create(t, env, c)
	ctx := context.Background()
	steady := pytorchJob{ns: ns, name: "steady", workers: 1}
	steady.create(t, env, c)
	firstUID := uidOf(t, env, ns, "flaky-master-0")
	waitCondition(t, env, c, ns, "steady", "PodsReady", metav1.ConditionTrue)
	record := groupRecord(c, ns, "flaky")
	m.advancePast(t, env, "Starting", record) // the start-timeout
	evicted := waitCondition(t, env, c, ns, "flaky", "Evicted", metav1.ConditionTrue)
	t.Logf("evicted: %s: %s", evicted.Reason, evicted.Message)
	env.WaitFor(t, "flaky-master-0 recreated by muster", func(context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "flaky-master-0", metav1.GetOptions{})
		return err == nil && string(p.UID) != firstUID, nil
	})
	m.advancePast(t, env, "Backoff", record)
	m.advancePast(t, env, "Starting", record) // the retry's start-timeout
	failed := waitCondition(t, env, c, ns, "flaky", "Failed", metav1.ConditionTrue)
	t.Logf("failed: %s: %s", failed.Reason, failed.Message)
	if s := stateOf(t, env, ns, "steady"); s.holding != 2 {
		t.Errorf("expected steady to keep its 2 pods running, found %d", s.holding)
	}
	env.WaitFor(t, "the failed group to hold nothing", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "flaky").holding == 0, nil
	})
}

// groupRecord reads the lifecycle record of a scheduler-plugins PodGroup, for
// advancePast.
func groupRecord(c client.Client, ns, name string) func(context.Context) (musterv1alpha1.GroupLifecycle, bool) {
	return func(ctx context.Context) (musterv1alpha1.GroupLifecycle, bool) {
		pg := &spv1alpha1.PodGroup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			return musterv1alpha1.GroupLifecycle{}, false
		}
		rec, err := recordOn(pg.Annotations, "PodGroup "+ns+"/"+name)
		return rec, err == nil
	}
}

// podRecord reads the lifecycle record of a group that has no object from one of its
// pods, for advancePast.
func podRecord(env *sandboxtest.Env, ns, pod string) func(context.Context) (musterv1alpha1.GroupLifecycle, bool) {
	return func(ctx context.Context) (musterv1alpha1.GroupLifecycle, bool) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return musterv1alpha1.GroupLifecycle{}, false // between an eviction and the pod's creation
		}
		rec, err := recordOn(p.Annotations, "pod "+pod)
		return rec, err == nil
	}
}

// uidOf returns a pod's UID.
func uidOf(t *testing.T, env *sandboxtest.Env, ns, name string) string {
	t.Helper()
	p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(p.UID)
}

// TestPlainGroupFailsAfterItsRetries: a group with no object (pods labelled
// muster.dev/group) whose worker never initialises is evicted at its start timeout; its
// pods, which have no controller, are created again by muster, and the group keeps its
// attempts across them: it Fails after max-retries, and the pods created after that wait
// in the failed group instead of starting it over. Before, the group ended with its last
// pod and the pods created again started it at attempt 1, for ever.
func TestPlainGroupFailsAfterItsRetries(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "plain", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	m := startMuster(t, env, musterOptions{clock: true})
	pod := func(i int) *corev1.Pod {
		return plainMember(ns, "flaky", i, map[string]string{
			musterv1alpha1.StartTimeoutAnnotation: flakyStartTimeout,
			musterv1alpha1.MaxRetriesAnnotation:   "1",
			musterv1alpha1.BackoffBaseAnnotation:  flakyBackoff,
		})
	}
	for i := range 2 {
		env.CreatePod(t, pod(i))
	}
	firstUID := uidOf(t, env, ns, "flaky-0")
	record := podRecord(env, ns, "flaky-0")
	m.advancePast(t, env, "Starting", record)
	m.advancePast(t, env, "Backoff", record)
	m.advancePast(t, env, "Starting", record)
	rec := waitPodRecord(t, env, ns, "flaky-0", "Failed")
	if rec.Failures != 2 || len(rec.Attempts) != 2 || rec.Reason != "RetryLimitExceeded" {
		t.Errorf("expected 2 failed attempts and reason RetryLimitExceeded, found %d failures, %d attempts, reason %s: %s",
			rec.Failures, len(rec.Attempts), rec.Reason, rec.Message)
	}
	// At the failure muster evicts the pods once more and creates them again, unbound.
	var settled *corev1.Pod
	env.WaitFor(t, "flaky-0 created again after the failure, unbound", func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "flaky-0", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || p.Spec.NodeName != "" {
			return false, nil
		}
		settled = p
		return true, nil
	})
	if string(settled.UID) == firstUID {
		t.Errorf("expected flaky-0 evicted and created again by muster, found the first pod (%s)", firstUID)
	}
	// A pod created once more (here by hand, as a controller would) joins the failed
	// group, and the record, unchanged, is written on it: muster explain reads it there.
	secondUID := string(settled.UID)
	if err := env.Kube.CoreV1().Pods(ns).Delete(context.Background(), "flaky-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "flaky-0 gone", func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "flaky-0", metav1.GetOptions{})
		return err != nil || string(p.UID) != secondUID, nil
	})
	env.CreatePod(t, pod(0))
	// The pods created after the failure wait: nothing is bound again, not even once
	// every timer the group could have has fired. The move of the clock past them all
	// also passes the group's next message refresh, at which muster writes the record
	// on the flaky-0 created by hand: a sign that it has passed since.
	m.AdvanceClock(t, m.pastEveryTimer())
	if rec := waitPodRecord(t, env, ns, "flaky-0", "Failed"); rec.Failures != 2 {
		t.Errorf("after every timer: expected the group still Failed after 2 failures, found %d failures: %s", rec.Failures, rec.Message)
	}
	for _, name := range []string{"flaky-0", "flaky-1"} {
		if p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil && p.Spec.NodeName != "" {
			t.Errorf("pod %s of the failed group was bound to %s", name, p.Spec.NodeName)
		}
	}
}

// TestRestartResumesRetries: muster stops while a group backs off after its first
// failed attempt; the muster started after it resumes the group from its lifecycle
// record: the group waits out the recorded backoff, and its second failure is its last
// (max-retries 1), with the attempt from before the restart in its history. Before, a
// restarted muster started every group over at attempt 1.
func TestRestartResumesRetries(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "restart", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	first := startMuster(t, env, musterOptions{clock: true})
	flaky := flakyJob(ns, flakyBackoff)
	flaky.create(t, env, c)
	record := groupRecord(c, ns, "flaky")
	first.advancePast(t, env, "Starting", record)
	var before musterv1alpha1.GroupLifecycle
	env.WaitFor(t, "flaky backing off after its first failure", func(context.Context) (bool, error) {
		before = lifecycleOf(t, c, ns, "flaky")
		return before.Phase == "Backoff" && before.Failures == 1 && len(before.Attempts) == 1 && before.WakeAt != nil, nil
	})
	first.stop(t)
	// The muster started after it has its own clock, at real time: the recorded
	// backoff ends later than that by the first one's advance and the backoff itself.
	second := startMuster(t, env, musterOptions{clock: true})
	second.advancePast(t, env, "Backoff", record)
	second.advancePast(t, env, "Starting", record)

	failed := waitCondition(t, env, c, ns, "flaky", "Failed", metav1.ConditionTrue)
	t.Logf("failed: %s: %s", failed.Reason, failed.Message)
	after := lifecycleOf(t, c, ns, "flaky")
	if after.Failures != 2 || len(after.Attempts) != 2 {
		t.Fatalf("expected 2 failed attempts in all, found %d failures and attempts %+v", after.Failures, after.Attempts)
	}
	if got, want := after.Attempts[0].AdmittedAt, before.Attempts[0].AdmittedAt; !got.Equal(&want) {
		t.Errorf("expected the attempt from before the restart (admitted %s) first in the history, found one admitted %s", want, got)
	}
	// The second attempt waited out the recorded backoff (the record's times are to the
	// second).
	if second := after.Attempts[1].AdmittedAt.Time; second.Before(before.WakeAt.Add(-time.Second)) {
		t.Errorf("expected the second attempt admitted at the backoff's end %s or later, found %s", before.WakeAt, second)
	}
}

// TestMemberFailedToStartEndsTheAttempt: a member with restartPolicy Never and no
// controller whose init fails is Failed for good, so its group cannot become Ready: the
// attempt ends at once, without holding the other member's GPU until the start timeout
// (10 minutes here), and the group fails after its retry with the failed container named.
func TestMemberFailedToStartEndsTheAttempt(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "failstart", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	m := startMuster(t, env, musterOptions{clock: true})
	for i := range 2 {
		p := plainMember(ns, "broken", i, map[string]string{
			musterv1alpha1.StartTimeoutAnnotation: "10m",
			musterv1alpha1.MaxRetriesAnnotation:   "1",
			musterv1alpha1.BackoffBaseAnnotation:  flakyBackoff,
		})
		p.Spec.RestartPolicy = corev1.RestartPolicyNever // member 1 fails instead of crash-looping
		env.CreatePod(t, p)
	}
	// The clock moves only through the backoff, never while an attempt runs.
	m.advancePast(t, env, "Backoff", podRecord(env, ns, "broken-0"))
	rec := waitPodRecord(t, env, ns, "broken-0", "Failed")
	if rec.Failures != 2 || len(rec.Attempts) != 2 {
		t.Fatalf("expected 2 failed attempts, found %d failures and attempts %+v", rec.Failures, rec.Attempts)
	}
	const want = "broken-1: container main exited with 1 (Error); 1 of 2 members placed in attempt"
	for _, a := range rec.Attempts {
		if a.Reason != "MemberFailedToStart" || !strings.Contains(a.Message, want) {
			t.Errorf("attempt %d: expected reason MemberFailedToStart and %q in the message, found %s: %s", a.Number, want, a.Reason, a.Message)
		}
		if held := a.EndedAt.Sub(a.AdmittedAt.Time); held >= 10*time.Minute {
			t.Errorf("attempt %d: expected it to end before the start timeout, found it held %s", a.Number, held)
		}
	}
}

// TestEvictedPodsAreMarkedDisrupted: before muster deletes the pods of a group it evicts,
// it gives them the DisruptionTarget condition (reason: the eviction's), so that a Job's
// podFailurePolicy can keep muster's evictions off its backoffLimit. The pods hold a
// finalizer here, so that they stay, terminating, for the test to read.
func TestEvictedPodsAreMarkedDisrupted(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "disrupt", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	m := startMuster(t, env, musterOptions{clock: true})
	const hold = "e2e.muster.dev/hold"
	names := []string{"late-0", "late-1"}
	for i := range names {
		p := plainMember(ns, "late", i, map[string]string{musterv1alpha1.StartTimeoutAnnotation: flakyStartTimeout})
		p.Finalizers = []string{hold}
		// A controller owns them (a Job that does not exist, so no controller acts on them),
		// so muster does not create them again.
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "late",
			UID: "uid-late", Controller: ptr.To(true)}}
		env.CreatePod(t, p)
	}
	t.Cleanup(func() {
		for _, name := range names {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			_, _ = env.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	})
	m.advancePast(t, env, "Starting", podRecord(env, ns, "late-0"))
	for _, name := range names {
		var cond corev1.PodCondition
		env.WaitFor(t, name+" evicted and marked DisruptionTarget", func(ctx context.Context) (bool, error) {
			p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.DisruptionTarget {
					cond = c
				}
			}
			return p.DeletionTimestamp != nil && cond.Status == corev1.ConditionTrue, nil
		})
		if cond.Reason != "StartTimeout" || !strings.Contains(cond.Message, "start-timeout "+flakyStartTimeout+" expired") {
			t.Errorf("%s: expected DisruptionTarget with reason StartTimeout and the timeout in the message, found %s: %s", name, cond.Reason, cond.Message)
		}
	}
}

// plainMember returns member i (named GROUP-i) of a plain group of two one-GPU pods
// with the given per-group annotations; member 1 never initialises (it crash-loops).
func plainMember(ns, group string, i int, annotations map[string]string) *corev1.Pod {
	b := sandboxtest.Pod(ns, fmt.Sprintf("%s-%d", group, i)).GPUs(1).SchedulerName("muster").
		Annotate(musterv1alpha1.MinMemberAnnotation, "2")
	for k, v := range annotations {
		b.Annotate(k, v)
	}
	if i == 1 {
		b.Annotate(kubelet.AnnotationFailInit, "true").RestartPolicy(corev1.RestartPolicyOnFailure)
	}
	p := b.Obj()
	p.Labels = map[string]string{musterv1alpha1.GroupLabel: group}
	return p
}

// The timers of the failing groups here: longer than any test's wait, so that only
// an advance of muster's clock (advancePast) fires them.
const (
	flakyStartTimeout = "10m0s"
	flakyBackoff      = "5m0s"
)

// flakyJob is a job "flaky" of a master and one worker, with no owner, whose worker
// never initialises (it crash-loops); its group has a start timeout of
// flakyStartTimeout, one retry and the given backoff.
func flakyJob(ns, backoff string) pytorchJob {
	return pytorchJob{ns: ns, name: "flaky", workers: 1, plain: true, restartPolicy: corev1.RestartPolicyOnFailure,
		groupAnnotations: map[string]string{
			musterv1alpha1.StartTimeoutAnnotation: flakyStartTimeout,
			musterv1alpha1.MaxRetriesAnnotation:   "1",
			musterv1alpha1.BackoffBaseAnnotation:  backoff,
		},
		podAnnotations: map[string]map[string]string{"flaky-worker-0": {kubelet.AnnotationFailInit: "true"}},
	}
}
