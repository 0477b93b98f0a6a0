package explain_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	gt "github.com/muster-sched/muster/internal/gangtest"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func members(n int, node bool, mutate func(i int, p *corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		b := gt.Pod("bert-worker-" + string(rune('0'+i))).GPU(1)
		if node {
			b.Node("n-" + string(rune('0'+i)))
		}
		p := b.Obj()
		if node {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if mutate != nil {
			mutate(i, p)
		}
		out = append(out, p)
	}
	return out
}

func facts(phase string, pods []*corev1.Pod) explain.Facts {
	admitted := metav1.NewTime(now.Add(-2 * time.Minute))
	wake := metav1.NewTime(now.Add(3 * time.Minute))
	return explain.Facts{
		Kind: "podgroup", Name: "bert", Namespace: "default", SchedulerNames: []string{"muster"},
		GroupAPI: "scheduling.x-k8s.io/v1alpha1 PodGroup", GroupServed: true, GroupFound: true,
		Spec:    engine.GroupSpec{Key: "Coscheduling/default/bert", Source: engine.Coscheduling, Namespace: "default", Name: "bert", MinMember: 4},
		Members: pods,
		Lifecycle: &musterv1alpha1.GroupLifecycle{
			Phase: phase, Queue: "default", MinMember: 4, Attempt: 1, MaxRetries: 3,
			StartTimeout: metav1.Duration{Duration: 5 * time.Minute}, RecoveryTimeout: metav1.Duration{Duration: 5 * time.Minute},
			AdmittedAt: &admitted, WakeAt: &wake,
		},
		Now: now,
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name     string
		facts    func() explain.Facts
		wantStep int
		want     []string // substrings of the text report
	}{
		{
			name:     "running",
			facts:    func() explain.Facts { return facts("Running", members(4, true, nil)) },
			wantStep: 0,
			want:     []string{"✓ 3. membership: members joined: 4 of the 4 spec.minMember requires", "verdict: the group is running"},
		},
		{
			name: "group object missing",
			facts: func() explain.Facts {
				f := facts("Queued", nil)
				f.GroupFound = false
				f.Parent = pytorchJob(4)
				return f
			},
			wantStep: 1,
			want:     []string{"✗ 1. objects exist", "--gang-scheduler-name=muster", "· 2."},
		},
		{
			name: "batch Job whose pods join no group",
			facts: func() explain.Facts {
				f := facts("Queued", nil)
				f.GroupFound = false
				f.Parent = &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "batch/v1", "kind": "Job",
					"metadata": map[string]any{"name": "sweep", "namespace": "default"},
				}}
				return f
			},
			wantStep: 1,
			want:     []string{"no pod of Job sweep joins a group", "the label muster.dev/group: sweep and the annotation muster.dev/min-member"},
		},
		{
			name: "batch Job between its pods' deletion and their creation",
			facts: func() explain.Facts {
				f := facts("Queued", nil)
				f.GroupFound, f.TemplateGroup = false, true
				f.GroupAPI = "plain group (label muster.dev/group)"
				f.Parent = &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "batch/v1", "kind": "Job",
					"metadata": map[string]any{"name": "sweep", "namespace": "default"},
				}}
				return f
			},
			wantStep: 1,
			want:     []string{"Job sweep has no pods now; its pod template joins plain group", "wait for the Job to create them"},
		},
		{
			name: "batch Job muster suspended for its group's backoff",
			facts: func() explain.Facts {
				f := facts("Backoff", nil)
				f.GroupFound, f.TemplateGroup = false, true
				f.Spec.Name = "sweep"
				f.Parent = &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "batch/v1", "kind": "Job",
					"metadata": map[string]any{"name": "sweep", "namespace": "default", "annotations": map[string]any{"muster.dev/suspended": "StartTimeout"}},
					"spec":     map[string]any{"suspend": true},
				}}
				return f
			},
			wantStep: 1,
			want: []string{"muster suspended Job sweep to evict its group sweep (StartTimeout); muster resumes it when the group's backoff ends",
				"(in 3m0s)", "try: wait: muster resumes the Job"},
		},
		{
			name: "member with another scheduler",
			facts: func() explain.Facts {
				return facts("Gathering", members(4, false, func(i int, p *corev1.Pod) {
					if i == 0 {
						p.Spec.SchedulerName = "default-scheduler"
					}
				}))
			},
			wantStep: 2,
			want:     []string{`bert-worker-0 (schedulerName "default-scheduler")`, "environment.schedulerName"},
		},
		{
			name: "members under two names muster serves",
			facts: func() explain.Facts {
				f := facts("Gathering", members(4, false, func(i int, p *corev1.Pod) {
					if i < 2 {
						p.Spec.SchedulerName = "scheduler-plugins-scheduler"
					}
				}))
				f.SchedulerNames = []string{"muster", "scheduler-plugins-scheduler"}
				return f
			},
			wantStep: 0,
			want:     []string{"✓ 2.", "4 members with schedulerName scheduler-plugins-scheduler or muster"},
		},
		{
			name: "member with a scheduler muster does not serve, two served",
			facts: func() explain.Facts {
				f := facts("Gathering", members(4, false, func(i int, p *corev1.Pod) {
					if i == 0 {
						p.Spec.SchedulerName = "default-scheduler"
					}
				}))
				f.SchedulerNames = []string{"muster", "volcano"}
				return f
			},
			wantStep: 2,
			want: []string{`1 of 4 members are not muster's: bert-worker-0 (schedulerName "default-scheduler")`,
				"muster also schedules pods of volcano (additionalSchedulerNames)"},
		},
		{
			name: "a task short of its minimum",
			facts: func() explain.Facts {
				f := facts("Gathering", members(4, false, func(_ int, p *corev1.Pod) {
					p.Annotations = map[string]string{engine.TaskAnnotation: "worker"}
				}))
				f.Spec.Source, f.Spec.TaskMinimums = engine.Volcano, map[string]int{"ps": 1, "worker": 2}
				return f
			},
			wantStep: 3,
			want: []string{"verdict: step 3: task ps has 0 of its minimum 1 member pods (pods annotated volcano.sh/task-spec: ps)",
				"create the task's missing pods"},
		},
		{
			name: "launcher outside the group",
			facts: func() explain.Facts {
				f := facts("Gathering", members(3, false, nil))
				f.Parent = pytorchJob(4)
				f.Outside = []*corev1.Pod{gt.Pod("bert-launcher").Obj()}
				return f
			},
			wantStep: 3,
			want:     []string{"PyTorchJob bert declares 4 replicas", "outside the group: bert-launcher", "scheduling.x-k8s.io/pod-group"},
		},
		{
			name: "impossible",
			facts: func() explain.Facts {
				f := facts("Impossible", members(1, false, nil))
				f.Spec.MinMember, f.Lifecycle.MinMember = 1, 1
				f.Lifecycle.Waiting, f.Lifecycle.WaitingKind = "default/bert-worker-0 needs 8 nvidia.com/gpu on one node; largest eligible node has 4", "Impossible"
				return f
			},
			wantStep: 4,
			want:     []string{"✗ 4. admission and fit", "largest eligible node has 4", "retries will not help"},
		},
		{
			name: "impossible: an extended resource backed by DRA",
			facts: func() explain.Facts {
				f := facts("Impossible", members(1, false, nil))
				f.Spec.MinMember, f.Lifecycle.MinMember = 1, 1
				f.Lifecycle.Waiting, f.Lifecycle.WaitingKind = "default/bert-worker-0 needs 1 nvidia.com/gpu on one node; largest eligible node has 0; "+
					"nvidia.com/gpu is provided through DRA by DeviceClass gpu.nvidia.com and no node has it as an extended resource: its devices serve it", "Impossible"
				f.Lifecycle.Wait = &musterv1alpha1.WaitReason{Kind: musterv1alpha1.WaitPlacement,
					Placement: &musterv1alpha1.PlacementDiagnosis{Code: musterv1alpha1.PlacementImpossible, MinMember: 1, Members: 1,
						Shapes: []musterv1alpha1.ShapeDiagnosis{{Shape: "{nvidia.com/gpu: 1}", Members: 1,
							Shortfall: &musterv1alpha1.Shortfall{Resource: "nvidia.com/gpu", Need: resource.MustParse("1"), Largest: resource.MustParse("0")}}}},
					ExtendedByDRA: &musterv1alpha1.ExtendedByDRA{Resource: "nvidia.com/gpu", DeviceClass: "gpu.nvidia.com"}}
				return f
			},
			wantStep: 4,
			want: []string{"provided through DRA by DeviceClass gpu.nvidia.com",
				"try: ask for at most as many nvidia.com/gpu per member as one node has devices of DeviceClass gpu.nvidia.com"},
		},
		{
			name: "quota",
			facts: func() explain.Facts {
				f := facts("Queued", members(4, false, nil))
				f.Lifecycle.Waiting, f.Lifecycle.WaitingKind = "needs 4 nvidia.com/gpu, queue team-a has 2 of 4 in use", "QuotaExceeded"
				f.Lifecycle.Queue = "team-a"
				return f
			},
			wantStep: 4,
			want:     []string{"queue team-a has 2 of 4 in use", "raise its spec.quota"},
		},
		{
			name: "quota lent to the cohort",
			facts: func() explain.Facts {
				f := facts("Queued", members(4, false, nil))
				f.Lifecycle.Waiting, f.Lifecycle.WaitingKind = "needs 4 nvidia.com/gpu, within queue team-b's quota (0 of 4 in use), "+
					"but cohort research has 8 of 8 in use: the rest is lent to other queues and is reclaimed", "QuotaExceeded"
				f.Lifecycle.Queue = "team-b"
				f.Lifecycle.Wait = &musterv1alpha1.WaitReason{Kind: musterv1alpha1.WaitQuotaExceeded, Queue: "team-b",
					Quota: &musterv1alpha1.QuotaWait{Resource: "nvidia.com/gpu", Need: resource.MustParse("4"), Quota: resource.MustParse("4"),
						Cohort: "research", Reclaimable: true}}
				f.Queue = &musterv1alpha1.Queue{Spec: musterv1alpha1.QueueSpec{Cohort: "research",
					Quota: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}}}
				return f
			},
			wantStep: 4,
			want:     []string{"queue team-b (nvidia.com/gpu 0 of 4 used, cohort research)", "is reclaimed", "nothing to do: the group is within its queue's quota"},
		},
		{
			name: "quota lent to the cohort, in a record without the typed reason",
			facts: func() explain.Facts {
				f := facts("Queued", members(4, false, nil))
				f.Lifecycle.Waiting, f.Lifecycle.WaitingKind = "needs 4 nvidia.com/gpu, within queue team-b's quota (0 of 4 in use), "+
					"but cohort research has 8 of 8 in use: the rest is lent to other queues and is reclaimed", "QuotaExceeded"
				f.Lifecycle.Queue = "team-b"
				f.Queue = &musterv1alpha1.Queue{Spec: musterv1alpha1.QueueSpec{Cohort: "research",
					Quota: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}}}
				return f
			},
			wantStep: 4,
			// The message is shown; the fix is the one the kind and the queue's cohort support.
			want: []string{"is reclaimed", "try: wait: for queue team-b's running groups to finish, or for what it lent to cohort research to be reclaimed"},
		},
		{
			name: "one worker never ready",
			facts: func() explain.Facts {
				return facts("Starting", members(4, true, func(i int, p *corev1.Pod) {
					if i == 3 {
						p.Status.Phase = corev1.PodPending
						p.Status.Conditions = nil
						p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{
							Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting"}}}}
					}
				}))
			},
			wantStep: 5,
			want:     []string{"3 of 4 bound members Ready", "bert-worker-3: init container init: CrashLoopBackOff", "start-timeout 5m0s fires at 2026-01-01T12:03:00Z (in 3m0s)", "3 of 3 retries left"},
		},
		{
			name: "preempted",
			facts: func() explain.Facts {
				f := facts("Backoff", members(4, false, nil))
				f.Lifecycle.Attempts = []musterv1alpha1.AttemptRecord{{Number: 1, AdmittedAt: metav1.NewTime(now.Add(-6 * time.Minute)),
					EndedAt: metav1.NewTime(now.Add(-time.Minute)), Stage: "Running", Reason: "Preempted", Message: "preempted by Coscheduling/default/vip (priority 1000)"}}
				return f
			},
			wantStep: 6,
			want: []string{"attempt 1 was preempted by Coscheduling/default/vip (priority 1000) in Running; queued again at 2026-01-01T12:03:00Z (in 3m0s); a preemption uses no retry (3 of 3 retries left)",
				"PriorityClass at least as high"},
		},
		{
			name: "over its quota in a cohort",
			facts: func() explain.Facts {
				f := facts("Queued", members(4, false, nil))
				f.Lifecycle.Waiting, f.Lifecycle.WaitingKind = "needs 4 nvidia.com/gpu, queue team-a has 8 of 4 in use (8 with borrowing) "+
					"and cohort research has 8 of 8 in use", "QuotaExceeded"
				f.Lifecycle.Queue = "team-a"
				f.Queue = &musterv1alpha1.Queue{Spec: musterv1alpha1.QueueSpec{Cohort: "research",
					Quota: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}}}
				return f
			},
			wantStep: 4,
			want:     []string{"cohort research has 8 of 8 in use", "or for what it lent to cohort research to be reclaimed"},
		},
		{
			name: "owner failed",
			facts: func() explain.Facts {
				f := facts("Failed", members(4, false, nil))
				f.Lifecycle.Reason = "OwnerFailed"
				f.Lifecycle.Message = "Job default/bert failed: BackoffLimitExceeded: Job has reached the specified backoff limit"
				return f
			},
			wantStep: 6,
			want: []string{"the group's owner failed, so muster stopped waiting for its members: Job default/bert failed: BackoffLimitExceeded",
				"failed pods' logs"},
		},
		{
			name: "reclaimed",
			facts: func() explain.Facts {
				f := facts("Backoff", members(4, false, nil))
				f.Lifecycle.Attempts = []musterv1alpha1.AttemptRecord{{Number: 1, AdmittedAt: metav1.NewTime(now.Add(-6 * time.Minute)),
					EndedAt: metav1.NewTime(now.Add(-time.Minute)), Stage: "Running", Reason: "Preempted",
					Message: "reclaimed by queue team-b of cohort research for Coscheduling/default/b1", Preemption: "Reclaim"}}
				return f
			},
			wantStep: 6,
			want: []string{"attempt 1 was reclaimed by queue team-b of cohort research for Coscheduling/default/b1 in Running",
				"should fit their own queue's spec.quota"},
		},
		{
			name: "failed after retries",
			facts: func() explain.Facts {
				f := facts("Failed", members(4, false, nil))
				f.Lifecycle.Attempt, f.Lifecycle.Failures, f.Lifecycle.WakeAt = 4, 4, nil
				f.Lifecycle.Attempts = []musterv1alpha1.AttemptRecord{{Number: 4, AdmittedAt: metav1.NewTime(now.Add(-6 * time.Minute)),
					EndedAt: metav1.NewTime(now.Add(-time.Minute)), Stage: "Starting", Reason: "StartTimeout", Message: "3 of 4 required members ready"}}
				return f
			},
			wantStep: 6,
			want:     []string{"failed after 4 attempts", "attempt 4: StartTimeout in Starting after 5m0s", "resubmit"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := explain.Build(tc.facts())
			var b bytes.Buffer
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if r.Verdict.Step != tc.wantStep {
				t.Errorf("verdict step %d, want %d\n%s", r.Verdict.Step, tc.wantStep, b.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, b.String())
				}
			}
			if len(r.Steps) != 6 {
				t.Errorf("%d steps, want 6", len(r.Steps))
			}
		})
	}
}

func pytorchJob(replicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": "bert", "namespace": "default"},
		"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Worker": map[string]any{"replicas": replicas},
		}},
	}}
	return u
}
