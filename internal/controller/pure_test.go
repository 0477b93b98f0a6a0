package controller

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/source"
)

// TestConditions: which condition is True in each phase, and where the message comes from.
func TestConditions(t *testing.T) {
	tests := []struct {
		name     string
		st       engine.Status
		wantTrue []string
		reason   map[string]string // condition type → reason, where it matters
		phase    spv1alpha1.PodGroupPhase
	}{
		{"gathering", engine.Status{Phase: lifecycle.Gathering}, nil, nil, spv1alpha1.PodGroupPending},
		{"queued, waiting", engine.Status{Phase: lifecycle.Queued, Waiting: "0/8 nodes are available", WaitingKind: "Unschedulable"},
			[]string{ConditionUnschedulable}, map[string]string{ConditionUnschedulable: "Unschedulable"}, spv1alpha1.PodGroupPending},
		{"impossible", engine.Status{Phase: lifecycle.Impossible, Waiting: "needs 8 nvidia.com/gpu", WaitingKind: "Impossible"},
			[]string{ConditionImpossible}, map[string]string{ConditionImpossible: "Impossible"}, spv1alpha1.PodGroupPending},
		{"invalid", engine.Status{Invalid: "spec.minMember: 0: must be at least 1"},
			[]string{ConditionImpossible}, map[string]string{ConditionImpossible: ReasonInvalidGroup}, spv1alpha1.PodGroupPending},
		{"starting", engine.Status{Phase: lifecycle.Starting}, []string{ConditionAdmitted}, nil, spv1alpha1.PodGroupScheduling},
		{"running", engine.Status{Phase: lifecycle.Running}, []string{ConditionAdmitted, ConditionPodsReady}, nil, spv1alpha1.PodGroupRunning},
		{"recovering", engine.Status{Phase: lifecycle.Recovering}, []string{ConditionAdmitted}, nil, spv1alpha1.PodGroupRunning},
		{"backoff", engine.Status{Phase: lifecycle.Backoff}, []string{ConditionEvicted}, nil, spv1alpha1.PodGroupPending},
		{"failed", engine.Status{Phase: lifecycle.Failed}, []string{ConditionFailed}, nil, spv1alpha1.PodGroupFailed},
		{"finished", engine.Status{Phase: lifecycle.Finished}, []string{ConditionAdmitted, ConditionPodsReady}, nil, spv1alpha1.PodGroupFinished},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gotTrue []string
			for _, c := range Conditions(tc.st) {
				if c.Status == metav1.ConditionTrue {
					gotTrue = append(gotTrue, c.Type)
				}
				if want, ok := tc.reason[c.Type]; ok && c.Reason != want {
					t.Errorf("%s reason = %q, want %q", c.Type, c.Reason, want)
				}
				if c.Reason == "" || c.Message == "" {
					t.Errorf("%s has an empty reason or message: %+v", c.Type, c)
				}
			}
			if d := cmp.Diff(tc.wantTrue, gotTrue); d != "" {
				t.Errorf("True conditions (-want +got):\n%s", d)
			}
			if got := podGroupPhase(tc.st); got != tc.phase {
				t.Errorf("PodGroup phase = %s, want %s", got, tc.phase)
			}
		})
	}
}

func TestEngineQueue(t *testing.T) {
	retries := int32(2)
	q := &musterv1alpha1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: musterv1alpha1.QueueSpec{
			Quota:    corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("16")},
			Priority: 5,
			Weight:   3,
			Defaults: &musterv1alpha1.GroupPolicy{StartTimeout: &metav1.Duration{Duration: time.Minute}, MaxRetries: &retries},
		},
	}
	got := engineQueue(q)
	if got.Name != "team-a" || got.Priority != 5 || got.Weight != 3 || !got.Quota.Equal(cluster.Resources{"nvidia.com/gpu": 16}) {
		t.Errorf("engineQueue = %+v", got)
	}
	if got.Defaults.StartTimeout == nil || *got.Defaults.StartTimeout != time.Minute || *got.Defaults.MaxRetries != 2 || got.Defaults.BackoffBase != nil {
		t.Errorf("defaults = %+v, want startTimeout 1m and maxRetries 2 only", got.Defaults)
	}
	if unlimited := engineQueue(&musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "free"}}); unlimited.Quota != nil {
		t.Errorf("a Queue without quota must be unlimited, got %v", unlimited.Quota)
	}
}

// TestReplacement: which failed members are replaced alone, and which are left to the
// group's lifecycle or their controller.
func TestReplacement(t *testing.T) {
	rejected := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w-1"},
		Spec:   corev1.PodSpec{NodeName: "n-1"},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfnvidia.com/gpu", Message: "node has 0 free"}}
	crashed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w-2"},
		Spec:   corev1.PodSpec{NodeName: "n-2"},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "NodeLost"}}
	owned := crashed.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u", Controller: ptrTrue()}}
	tests := []struct {
		name   string
		phase  lifecycle.Phase
		pod    *corev1.Pod
		reason string // "" = not replaced alone
	}{
		{"kubelet rejection while starting", lifecycle.Starting, rejected, ReasonKubeletRejected},
		{"kubelet rejection while queued is not ours to fix", lifecycle.Queued, rejected, ""},
		{"plain member lost while running", lifecycle.Running, crashed, ReasonMemberFailed},
		{"plain member failing while starting: the start-timeout decides", lifecycle.Starting, crashed, ""},
		{"member with a controller: the controller replaces it", lifecycle.Running, owned, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, ok := replacement(tc.phase, tc.pod, "Labels/ns/g")
			if got := map[bool]string{true: ev.Reason, false: ""}[ok]; got != tc.reason {
				t.Fatalf("replacement reason %q, want %q", got, tc.reason)
			}
			if ok && !strings.Contains(ev.Message, tc.pod.Name) {
				t.Errorf("message %q does not name the pod", ev.Message)
			}
		})
	}
}

func ptrTrue() *bool { b := true; return &b }

func TestKeys(t *testing.T) {
	ref := refOfKey("Coscheduling/team-a/bert")
	if d := cmp.Diff(source.Ref{Source: engine.Coscheduling, Namespace: "team-a", Name: "bert"}, ref); d != "" {
		t.Errorf("refOfKey (-want +got):\n%s", d)
	}
	if ref.Key() != "Coscheduling/team-a/bert" {
		t.Errorf("Key() does not round-trip: %s", ref.Key())
	}
	long := strings.Repeat("x", 300)
	if name := recordName("ns", long); len(name) > 253 || !strings.HasPrefix(name, "muster-recreate-") {
		t.Errorf("recordName of a 300-character pod name = %q (%d characters)", name, len(name))
	}
	if recordName("a", "w-0") != "muster-recreate-a.w-0" {
		t.Errorf("recordName(a, w-0) = %q", recordName("a", "w-0"))
	}
}

// TestPlanAnnotations: a plan is carried as JSON under muster.dev/placement, and a plan
// too large for a pod's annotations is refused with an error naming the group, its
// size and the limit.
func TestPlanAnnotations(t *testing.T) {
	plan := func(members int) Plan {
		p := Plan{Group: "Native/ns/big", Attempt: 1, Pods: map[string]Assignment{}}
		for i := range members {
			p.Pods[fmt.Sprintf("big-worker-%d", i)] = Assignment{
				Node: fmt.Sprintf("node-%05d", i), UID: types.UID(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)),
			}
		}
		return p
	}
	s := &scheduler{signer: signer{key: make([]byte, signingKeyBytes)}}
	got, err := s.planAnnotations(plan(8))
	if err != nil {
		t.Fatalf("an 8-member plan: expected annotations, found %v", err)
	}
	var back Plan
	if err := json.Unmarshal([]byte(got[musterv1alpha1.PlacementAnnotation]), &back); err != nil || len(back.Pods) != 8 {
		t.Errorf("an 8-member plan: expected it back with 8 members, found %+v (%v)", back, err)
	}
	got, err = s.planAnnotations(plan(4000))
	if err == nil || got != nil {
		t.Fatalf("a 4,000-member plan: expected an error and no annotations, found %v", got)
	}
	for _, want := range []string{"Native/ns/big", "4000 members", "204800"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("expected the error to name %q, found %q", want, err)
		}
	}
}

// TestResumeAt: a Job suspended for a group is resumed at the end of its backoff, never
// once the group has Failed, and at once otherwise.
func TestResumeAt(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		st   engine.Status
		want time.Time
	}{
		{"backoff", engine.Status{Phase: lifecycle.Backoff, WakeAt: now.Add(30 * time.Second)}, now.Add(30 * time.Second)},
		{"backoff already over", engine.Status{Phase: lifecycle.Backoff, WakeAt: now.Add(-time.Second)}, now},
		{"failed", engine.Status{Phase: lifecycle.Failed}, time.Time{}},
		{"queued", engine.Status{Phase: lifecycle.Queued}, now},
	}
	for _, tc := range tests {
		if got := resumeAt(tc.st, now); !got.Equal(tc.want) {
			t.Errorf("%s: expected %v, found %v", tc.name, tc.want, got)
		}
	}
}
