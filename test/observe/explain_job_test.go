package observe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestExplainBatchJob: `muster explain job/NAME` finds the group a batch Job's pods join,
// here a plain group of another name, and walks it; for a Job with no pods it reads the
// group from the pod template, and the group's record from a Job muster suspended; for a Job whose pods join no group it says so, with the
// labels to add. The Jobs run through the sandbox's Job
// controller; their pod names are random, so the reports are checked line by line
// rather than against golden files.
func TestExplainBatchJob(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "batch", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	addr := startMuster(t, env)
	const cleanups = "muster_group_cleanup_seconds_count"
	cleanupsBefore := scrape(t, env, addr, cleanups)
	ns := namespace(t, env, "explain-batch")
	grouped := batchJob(ns, "train", map[string]string{musterv1alpha1.GroupLabel: "train-gang"})
	grouped.Spec.Template.Annotations = map[string]string{musterv1alpha1.MinMemberAnnotation: "2"}
	loose := batchJob(ns, "loose", nil)
	loose.Spec.Suspend = ptr.To(true) // its pods would take the GPUs the group needs
	later := batchJob(ns, "later", map[string]string{musterv1alpha1.GroupLabel: "later"})
	later.Spec.Suspend = ptr.To(true)
	broken := batchJob(ns, "broken", map[string]string{musterv1alpha1.GroupLabel: "broken"})
	broken.Spec.Template.Annotations = map[string]string{
		musterv1alpha1.MinMemberAnnotation: "2", musterv1alpha1.StartTimeoutAnnotation: "2s",
		musterv1alpha1.MaxRetriesAnnotation: "0", kubelet.AnnotationFailInit: "true",
	}
	broken.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure // it crash-loops
	for _, j := range []*batchv1.Job{grouped, loose, later, broken} {
		createJob(t, env, j)
	}

	// A Job with no pods: the group is read from its pod template.
	wantLines(t, explain.Build(gather(t, env, "job/later", ns)), 1,
		"✗ 1. objects exist: Job explain-batch/later exists",
		"Job later has no pods now; its pod template joins plain group (label muster.dev/group) later; the Job is suspended",
		"try: resume the Job (spec.suspend: false)")

	r := waitExplain(t, env, "job/train", ns, func(f explain.Facts) bool {
		return phase("Running")(f) && readyMembers(f) == 2
	})
	wantLines(t, r, 0,
		"Labels explain-batch/train-gang (Running)",
		"✓ 1. objects exist: Job explain-batch/train exists; plain group (label muster.dev/group) explain-batch/train-gang exists",
		"✓ 3. membership: members joined: 2 of the 2 metadata.annotations[muster.dev/min-member] requires",
		"verdict: the group is running: 2 of minMember 2 members Ready")

	// A Job muster suspended: its group's record is on it.
	r = waitExplain(t, env, "job/broken", ns, func(f explain.Facts) bool { return f.TemplateGroup && phase("Failed")(f) })
	wantLines(t, r, 1,
		"muster suspended Job broken to evict its group broken (RetryLimitExceeded); the group Failed: 1 of 1 attempts failed",
		"try: fix what made its attempts fail (kubectl get events), then delete Job broken and create it again")
	// Its pods gone, the eviction's cleanup is measured as the engine's are.
	env.WaitFor(t, "the cleanup of Job broken's pods measured", func(context.Context) (bool, error) {
		return scrape(t, env, addr, cleanups) > cleanupsBefore, nil
	})

	// Resumed, the loose Job creates its pods; they join no group.
	patch := []byte(`{"spec":{"suspend":false}}`)
	if _, err := env.Kube.BatchV1().Jobs(ns).Patch(context.Background(), "loose", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "the loose Job's pods", func(ctx context.Context) (bool, error) {
		list, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=loose"})
		return err == nil && len(list.Items) == 2, err
	})
	wantLines(t, explain.Build(gather(t, env, "job/loose", ns)), 1,
		"✗ 1. objects exist: Job explain-batch/loose exists",
		"no pod of Job loose joins a group, and no scheduling.x-k8s.io/v1alpha1 PodGroup is named loose",
		"try: give the pod template the label muster.dev/group: loose and the annotation muster.dev/min-member")
}

// batchJob is an Indexed Job of two one-GPU pods of muster's, with labels on its pods.
func batchJob(ns, name string, labels map[string]string) *batchv1.Job {
	pod := sandboxtest.Pod(ns, "").GPUs(1).SchedulerName("muster").Obj()
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		},
	}
}

// createJob creates j and deletes it, with its pods, when the test ends.
func createJob(t *testing.T, env *sandboxtest.Env, j *batchv1.Job) {
	t.Helper()
	if _, err := env.Kube.BatchV1().Jobs(j.Namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		background := metav1.DeletePropagationBackground
		err := env.Kube.BatchV1().Jobs(j.Namespace).Delete(context.Background(), j.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil {
			t.Errorf("deleting Job %s/%s: %v", j.Namespace, j.Name, err)
		}
	})
}

// wantLines checks that the report's verdict names step and that its text has each of
// lines (a line, or the start of one).
func wantLines(t *testing.T, r explain.Report, step int, lines ...string) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := normalize(b.String())
	for _, want := range lines {
		if !strings.Contains(text, want) {
			t.Errorf("expected the report to have %q, found:\n%s", want, text)
		}
	}
	if r.Verdict.Step != step {
		t.Errorf("verdict names step %d, want step %d:\n%s", r.Verdict.Step, step, text)
	}
}
