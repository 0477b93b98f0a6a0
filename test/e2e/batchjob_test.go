package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestBatchJobKeepsItsBackoffLimit runs two Indexed batch Jobs of two one-GPU workers
// that never initialise, through the sandbox's upstream Job controller, each with
// backoffLimit 0. muster evicts them at their start timeout and marks the pods it
// evicts DisruptionTarget. The Job whose podFailurePolicy ignores that condition
// creates its pods again and muster's retries run their course: muster fails the group
// after max-retries, and the Job itself has not failed. The Job without the policy
// counts the first eviction against its backoffLimit and fails at once, as
// docs/integrations.md warns.
func TestBatchJobKeepsItsBackoffLimit(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "batch", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	startMuster(t, env, musterOptions{})
	ignoring := trainingJob(ns, "ignoring")
	ignoring.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:          batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}}}
	counting := trainingJob(ns, "counting")
	ctx := context.Background()
	for _, j := range []*batchv1.Job{ignoring, counting} {
		if _, err := env.Kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var failed *batchv1.JobCondition
	env.WaitFor(t, "Job counting Failed at muster's first eviction", func(ctx context.Context) (bool, error) {
		j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, "counting", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		failed = jobCondition(j, batchv1.JobFailed)
		return failed != nil, nil
	})
	if failed.Reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Errorf("Job counting: expected reason %s, found %s: %s", batchv1.JobReasonBackoffLimitExceeded, failed.Reason, failed.Message)
	}

	var rec musterv1alpha1.GroupLifecycle
	env.WaitFor(t, "the group of Job ignoring Failed after its retries", func(ctx context.Context) (bool, error) {
		rec = musterv1alpha1.GroupLifecycle{}
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=ignoring"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if v := p.Annotations[musterv1alpha1.LifecycleAnnotation]; v != "" {
				if err := json.Unmarshal([]byte(v), &rec); err != nil {
					return false, fmt.Errorf("decoding the lifecycle record on %s: %w", p.Name, err)
				}
				if rec.Phase == "Failed" {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if rec.Failures != 2 || rec.Reason != "RetryLimitExceeded" {
		t.Errorf("expected 2 failed attempts and reason RetryLimitExceeded, found %d failures, reason %s: %s", rec.Failures, rec.Reason, rec.Message)
	}
	j, err := env.Kube.BatchV1().Jobs(ns).Get(ctx, "ignoring", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := jobCondition(j, batchv1.JobFailed); c != nil || j.Status.Failed != 0 {
		t.Errorf("Job ignoring: expected no failure counted, found %d failed and condition %+v", j.Status.Failed, c)
	}
}

// trainingJob is an Indexed batch Job of two one-GPU workers that never initialise,
// a plain muster group (muster.dev/group NAME, minimum 2) with a 2s start timeout,
// one retry and a 1s backoff, and backoffLimit 0.
func trainingJob(ns, name string) *batchv1.Job {
	pod := sandboxtest.Pod(ns, "").GPUs(1).SchedulerName("muster").
		Annotate(musterv1alpha1.MinMemberAnnotation, "2").
		Annotate(musterv1alpha1.StartTimeoutAnnotation, "2s").
		Annotate(musterv1alpha1.MaxRetriesAnnotation, "1").
		Annotate(musterv1alpha1.BackoffBaseAnnotation, "1s").
		Annotate(kubelet.AnnotationFailInit, "true").Obj()
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
