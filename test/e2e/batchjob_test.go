package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestBatchJobSuspendedBetweenAttempts runs, through the sandbox's upstream Job
// controller, two Indexed batch Jobs of two one-GPU workers that are never Ready in time, each
// with backoffLimit 0. muster evicts them at their start timeout:
//   - Job direct, which nothing else controls, by suspending it: the Job controller
//     deletes its pods without counting them as failed, muster resumes it when the
//     backoff ends, and after max-retries leaves it suspended, its group Failed, with
//     the lifecycle record on the Job. The Job itself never failed. Deleted and created
//     again, fixed, it runs at once: the failed group went with the old Job.
//   - Job child, which a JobSet controls (whose controller would undo a suspension), by
//     deleting its pods, marked DisruptionTarget first: its podFailurePolicy ignores
//     them, and muster's retries run their course without failing it either.
func TestBatchJobSuspendedBetweenAttempts(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "batch", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	startMuster(t, env, musterOptions{})
	direct := trainingJob(ns, "direct", "1s")
	child := trainingJob(ns, "child", "1s")
	child.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "child",
		UID: "uid-jobset-child", Controller: ptr.To(true)}}
	child.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:          batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}}}
	ctx := context.Background()
	for _, j := range []*batchv1.Job{direct, child} {
		if _, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var job *batchv1.Job
	rec := waitJobRecord(t, env, ns, "direct", "Failed", func(j *batchv1.Job) { job = j })
	if rec.Failures != 2 || len(rec.Attempts) != 2 || rec.Reason != "RetryLimitExceeded" {
		t.Errorf("Job direct: expected 2 failed attempts and reason RetryLimitExceeded, found %d failures, %d attempts, reason %s: %s",
			rec.Failures, len(rec.Attempts), rec.Reason, rec.Message)
	}
	if job.Spec.Suspend == nil || !*job.Spec.Suspend || job.Annotations[musterv1alpha1.SuspendedAnnotation] == "" {
		t.Errorf("Job direct: expected it left suspended, with %s, found suspend %v, annotations %v",
			musterv1alpha1.SuspendedAnnotation, job.Spec.Suspend, job.Annotations)
	}
	if c := jobCondition(job, batchv1.JobFailed); c != nil || job.Status.Failed != 0 {
		t.Errorf("Job direct: expected no failure counted, found %d failed and condition %+v", job.Status.Failed, c)
	}

	// The Job controller deletes the pods of a suspended Job.
	env.WaitFor(t, "the pods of Job direct gone", func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=direct"})
		return err == nil && len(pods.Items) == 0, err
	})
	// Fixed and created again under the same name, the Job's group starts anew: the
	// failed group's state went with the Job that kept it.
	background := metav1.DeletePropagationBackground
	if err := env.Kube.BatchV1().Jobs(ns).Delete(ctx, "direct", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "Job direct gone", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, "direct", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	fixed := trainingJob(ns, "direct", "1s")
	delete(fixed.Spec.Template.Annotations, kubelet.AnnotationReadyAfter)
	if _, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, fixed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec := waitPlainRecord(t, env, ns, "direct", "Running"); rec.Attempt != 1 || rec.Failures != 0 {
		t.Errorf("Job direct created again: expected its group running at attempt 1, found attempt %d with %d failures", rec.Attempt, rec.Failures)
	}

	rec = waitPlainRecord(t, env, ns, "child", "Failed")
	if rec.Failures != 2 || rec.Reason != "RetryLimitExceeded" {
		t.Errorf("Job child: expected 2 failed attempts and reason RetryLimitExceeded, found %d failures, reason %s: %s", rec.Failures, rec.Reason, rec.Message)
	}
	j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, "child", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := jobCondition(j, batchv1.JobFailed); c != nil || j.Status.Failed != 0 || (j.Spec.Suspend != nil && *j.Spec.Suspend) {
		t.Errorf("Job child: expected it neither failed nor suspended, found %d failed, condition %+v, suspend %v", j.Status.Failed, c, j.Spec.Suspend)
	}
}

// TestSuspendedJobResumesAfterRestart: muster stops while a Job it suspended waits out
// its group's backoff, its pods still terminating (they take their time, as workers
// that checkpoint on SIGTERM do: a finalizer holds them); the muster started after it
// finds the Job, takes its pods for pods on their way out rather than members, resumes
// the Job at the backoff's end, and resumes the group from the record on the Job: the
// second failed attempt is its last (max-retries 1), with the first in its history.
// (The old pods were taken for members: the group started anew from them, and its
// history lost the attempt from before the restart.)
func TestSuspendedJobResumesAfterRestart(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "resume", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	first := startMuster(t, env, musterOptions{})
	const hold = "e2e.muster.dev/hold"
	job := trainingJob(ns, "again", "6s")
	job.Spec.Template.Finalizers = []string{hold}
	t.Cleanup(func() { releasePods(env, ns, hold) })
	if _, err := env.Kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitJobRecord(t, env, ns, "again", "Backoff", nil)
	first.stop(t)
	var old []corev1.Pod
	env.WaitFor(t, "the pods of Job again terminating", func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=again"})
		if err != nil || len(pods.Items) != 2 {
			return false, err
		}
		old = pods.Items
		return !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp == nil }), nil
	})
	// The record a plain group's pod carries may lag the one on the Job: muster writes it
	// off the loop, and once the Job is suspended its pods are no members to write it to.
	// The old pods get the record as it stood during the first attempt, as in the CI run
	// that found the bug.
	stale := staleRecord(before)
	setRecord(t, env, old, stale)
	startMuster(t, env, musterOptions{})
	// Pods on their way out are no members: muster writes no record on them.
	env.WaitFor(t, "Job again resumed", func(ctx context.Context) (bool, error) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, "again", metav1.GetOptions{})
		return err == nil && j.Spec.Suspend != nil && !*j.Spec.Suspend, err
	})
	for _, p := range old {
		rec, err := recordOn(getPod(t, env, ns, p.Name).Annotations, "pod "+p.Name)
		if err != nil || !equality.Semantic.DeepEqual(rec, *stale) {
			t.Errorf("pod %s, on its way out: expected its record left as it was (phase %s), found phase %s, attempt %d, %d failures (%v)",
				p.Name, stale.Phase, rec.Phase, rec.Attempt, rec.Failures, err)
		}
	}
	checkHistoryKept(t, before, waitJobRecord(t, env, ns, "again", "Failed", nil))
}

// TestResumedJobKeepsItsHistoryAfterRestart: muster resumes a Job it suspended at the
// end of its group's backoff, binds the new pods as the group's second attempt, and
// stops before it writes the group's record on them: the record on the Job still says
// Backoff. The muster started after it takes the bound pods over as the second attempt,
// which fails at its start timeout and is the group's last (max-retries 1), with the
// first in its history. (It queued the group at the end of the recorded backoff with
// no member left to place: Impossible, "minMember 1 is larger than the group's 0
// members", its pods running.)
func TestResumedJobKeepsItsHistoryAfterRestart(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "resumed", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	first := startMuster(t, env, musterOptions{})
	job := trainingJob(ns, "again", "2s")
	job.Spec.Template.Annotations[musterv1alpha1.StartTimeoutAnnotation] = "8s"
	ctx := context.Background()
	if _, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitJobRecord(t, env, ns, "again", "Backoff", nil)
	ended := before.Attempts[0].EndedAt.Time // the old pods were made before, the new ones after
	var fresh []corev1.Pod
	env.WaitFor(t, "Job again resumed, its new pods bound", func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=again"})
		if err != nil {
			return false, err
		}
		fresh = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
			return !p.CreationTimestamp.After(ended) || p.DeletionTimestamp != nil || p.Spec.NodeName == ""
		})
		return len(fresh) == 2, nil
	})
	first.stop(t)
	setRecord(t, env, fresh, nil)
	startMuster(t, env, musterOptions{})
	checkHistoryKept(t, before, waitJobRecord(t, env, ns, "again", "Failed", nil))
}

// staleRecord is before, a record of a group in Backoff after its first attempt, as it
// stood during that attempt.
func staleRecord(before musterv1alpha1.GroupLifecycle) *musterv1alpha1.GroupLifecycle {
	stale := before
	stale.Phase, stale.Reason, stale.Message, stale.Failures, stale.WakeAt, stale.Attempts = string(lifecycle.Starting), "", "", 0, nil, nil
	return &stale
}

// setRecord writes rec as the lifecycle record of each of pods, or removes theirs when
// rec is nil.
func setRecord(t *testing.T, env *sandboxtest.Env, pods []corev1.Pod, rec *musterv1alpha1.GroupLifecycle) {
	t.Helper()
	var value any // null removes the annotation
	if rec != nil {
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		value = string(data)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		musterv1alpha1.LifecycleAnnotation: value}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if _, err := env.Kube.CoreV1().Pods(p.Namespace).Patch(context.Background(), p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkHistoryKept checks that after, the record of a group Failed at its second
// attempt, kept the first attempt of before (the record of its Backoff after it), and
// that the second began at the backoff's end.
func checkHistoryKept(t *testing.T, before, after musterv1alpha1.GroupLifecycle) {
	t.Helper()
	if after.Failures != 2 || len(after.Attempts) != 2 {
		t.Fatalf("expected 2 failed attempts in all, found %d failures and attempts %+v", after.Failures, after.Attempts)
	}
	if got, want := after.Attempts[0].AdmittedAt, before.Attempts[0].AdmittedAt; !got.Equal(&want) {
		t.Errorf("expected the attempt from before the restart (admitted %s) first, found one admitted %s", want, got)
	}
	if second := after.Attempts[1].AdmittedAt.Time; second.Before(before.WakeAt.Add(-time.Second)) {
		t.Errorf("expected the second attempt admitted at the backoff's end %s or later, found %s", before.WakeAt, second)
	}
}

// releasePods removes finalizer from every pod in ns that has it.
func releasePods(env *sandboxtest.Env, ns, finalizer string) {
	ctx := context.Background()
	pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		if i := slices.Index(p.Finalizers, finalizer); i >= 0 {
			patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`, i, finalizer, i)
			_, _ = env.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		}
	}
}

// waitJobRecord waits until Job name is suspended by muster with a lifecycle record in
// phase, and returns the record; seen, if set, gets the Job.
func waitJobRecord(t *testing.T, env *sandboxtest.Env, ns, name, phase string, seen func(*batchv1.Job)) musterv1alpha1.GroupLifecycle {
	t.Helper()
	var rec musterv1alpha1.GroupLifecycle
	env.WaitFor(t, fmt.Sprintf("Job %s suspended by muster, its group %s", name, phase), func(ctx context.Context) (bool, error) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if rec, err = recordOn(j.Annotations, "Job "+name); err != nil {
			return false, err
		}
		if seen != nil {
			seen(j)
		}
		return j.Annotations[musterv1alpha1.SuspendedAnnotation] != "" && rec.Phase == phase, nil
	})
	return rec
}

// waitPlainRecord waits until a pod of Job name carries its plain group's lifecycle
// record in phase, and returns the record.
func waitPlainRecord(t *testing.T, env *sandboxtest.Env, ns, name, phase string) musterv1alpha1.GroupLifecycle {
	t.Helper()
	var rec musterv1alpha1.GroupLifecycle
	env.WaitFor(t, fmt.Sprintf("the group of Job %s %s", name, phase), func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if rec, err = recordOn(p.Annotations, "pod "+p.Name); err != nil || rec.Phase == phase {
				return err == nil, err
			}
		}
		return false, nil
	})
	return rec
}

// trainingJob is an Indexed batch Job of two one-GPU workers that are not Ready for an
// hour (a fault that fails them would spend the Job's backoffLimit of 0),
// a plain muster group (muster.dev/group NAME, minimum 2) with a 2s start timeout,
// one retry and the given backoff, and backoffLimit 0.
func trainingJob(ns, name, backoff string) *batchv1.Job {
	pod := sandboxtest.Pod(ns, "").GPUs(1).SchedulerName("muster").
		Annotate(musterv1alpha1.MinMemberAnnotation, "2").
		Annotate(musterv1alpha1.StartTimeoutAnnotation, "2s").
		Annotate(musterv1alpha1.MaxRetriesAnnotation, "1").
		Annotate(musterv1alpha1.BackoffBaseAnnotation, backoff).
		Annotate(kubelet.AnnotationReadyAfter, "1h").Obj()
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), BackoffLimit: ptr.To[int32](0),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{musterv1alpha1.GroupLabel: name}, Annotations: pod.Annotations},
				Spec:       pod.Spec,
			},
		},
	}
}

// jobCondition returns j's condition of type typ if it is True, else nil.
func jobCondition(j *batchv1.Job, typ batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// TestPreemptedJobIsSuspendedAndResumed: a higher-priority job preempts a running batch
// Job's group on a full cluster. muster suspends the Job (reason Preempted) rather than
// deleting its pods, the preemptor runs on the freed nodes, and no other group is
// evicted while the Job's pods go. The preempted group is queued again at once in its
// place, so muster resumes the Job: its pods come back and wait, holding nothing, while
// the cluster is full; the Job has counted no failure.
func TestPreemptedJobIsSuspendedAndResumed(t *testing.T) {
	env, ns, urgent, c := preemptionCluster(t, "preempt-job", 3)

	old := pytorchJob{ns: ns, name: "old", workers: 0}
	old.create(t, env, c)
	waitCondition(t, env, c, ns, "old", "PodsReady", metav1.ConditionTrue)
	low := trainingJob(ns, "low", "1s")
	delete(low.Spec.Template.Annotations, kubelet.AnnotationReadyAfter)
	ctx := context.Background()
	if _, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, low, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlainRecord(t, env, ns, "low", "Running")

	(pytorchJob{ns: ns, name: "vip", workers: 1, priorityClass: urgent}).create(t, env, c)
	var job *batchv1.Job
	// A preempted group is queued again at once in its place, so muster resumes the Job
	// as soon as it has suspended it: the suspension shows in the Job's Event, not in an
	// annotation that lasts.
	env.WaitFor(t, "Job low suspended for the preemption", func(ctx context.Context) (bool, error) {
		evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Job,involvedObject.name=low"})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == lifecycle.ReasonPreempted && strings.Contains(ev.Message, "muster suspended the Job") {
				return true, nil
			}
		}
		return false, nil
	})
	waitCondition(t, env, c, ns, "vip", "PodsReady", metav1.ConditionTrue)
	if cond, _ := groupCondition(t, c, ns, "old", "Evicted"); cond.Status == metav1.ConditionTrue {
		t.Errorf("old: expected it spared, found Evicted: %s: %s", cond.Reason, cond.Message)
	}

	env.WaitFor(t, "Job low resumed, its pods back and waiting", func(ctx context.Context) (bool, error) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, "low", metav1.GetOptions{})
		if err != nil || (j.Spec.Suspend != nil && *j.Spec.Suspend) || j.Annotations[musterv1alpha1.SuspendedAnnotation] != "" {
			return false, err
		}
		job = j
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=low"})
		if err != nil || len(pods.Items) != 2 {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				return false, fmt.Errorf("pod %s of the preempted Job bound to %s while the cluster is full", p.Name, p.Spec.NodeName)
			}
		}
		return true, nil
	})
	if c := jobCondition(job, batchv1.JobFailed); c != nil || job.Status.Failed != 0 {
		t.Errorf("Job low: expected no failure counted, found %d failed and condition %+v", job.Status.Failed, c)
	}
}

// TestGroupFailsWithItsJob: both workers of an Indexed Job with backoffLimit 0 fail to
// start (restartPolicy Never). The Job controller fails the Job, and muster fails its
// group with reason OwnerFailed and the Job's reason within seconds, rather than leave it
// Starting until its 10-minute start timeout; it neither suspends the failed Job nor
// deletes the failed pods, whose logs say why.
func TestGroupFailsWithItsJob(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "jobfails", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	startMuster(t, env, musterOptions{})
	j := trainingJob(ns, "broken", "1s")
	j.Spec.Template.Annotations[musterv1alpha1.StartTimeoutAnnotation] = "10m"
	j.Spec.Template.Annotations[kubelet.AnnotationFailInit] = "true"
	delete(j.Spec.Template.Annotations, kubelet.AnnotationReadyAfter)
	ctx := context.Background()
	if _, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := waitPlainRecord(t, env, ns, "broken", "Failed")
	if rec.Reason != "OwnerFailed" || !strings.Contains(rec.Message, "Job "+ns+"/broken failed: BackoffLimitExceeded") || rec.Failures != 0 {
		t.Errorf("expected the group Failed with reason OwnerFailed naming the Job's BackoffLimitExceeded and no failed attempt, found %s %q with %d failures",
			rec.Reason, rec.Message, rec.Failures)
	}
	job, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, "broken", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		t.Errorf("expected the failed Job left as it is, found it suspended")
	}
	pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=broken"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodFailed || p.DeletionTimestamp != nil {
			t.Errorf("pod %s: expected it kept, Failed, found %s (deleting: %t)", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
		}
	}
	if len(pods.Items) != 2 {
		t.Errorf("expected the Job's 2 failed pods kept, found %d", len(pods.Items))
	}
}
