package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

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
		{"preempted, queued in its place", engine.Status{Phase: lifecycle.Queued, Attempt: 1, Waiting: "0/8 nodes are available", WaitingKind: "Unschedulable",
			Attempts: []lifecycle.Attempt{{Number: 1, Reason: lifecycle.ReasonPreempted, Message: "preempted by x (priority 10)"}}},
			[]string{ConditionUnschedulable, ConditionEvicted}, map[string]string{ConditionEvicted: lifecycle.ReasonPreempted}, spv1alpha1.PodGroupPending},
		{"preempted, admitted again", engine.Status{Phase: lifecycle.Running, Attempt: 2,
			Attempts: []lifecycle.Attempt{{Number: 1, Reason: lifecycle.ReasonPreempted, Message: "preempted by x (priority 10)"}}},
			[]string{ConditionAdmitted, ConditionPodsReady}, nil, spv1alpha1.PodGroupRunning},
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
	s := &binder{signer: signer{key: make([]byte, signingKeyBytes)}}
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

// TestConditionsSayWhatEachMeans: a waiting group's Unschedulable condition carries the
// admission pass's reason and message; its other conditions do not repeat them, each
// saying what it means instead (Failed=False counts the retries left).
func TestConditionsSayWhatEachMeans(t *testing.T) {
	st := engine.Status{Phase: lifecycle.Queued, Reason: "Queued", Message: "queued",
		Waiting:     `queue "team-a" does not admit namespace "b": its spec.namespaceSelector does not select the namespace`,
		WaitingKind: "QueueNotAllowed", Failures: 1, Policy: lifecycle.Policy{MaxRetries: 3}}
	want := map[string]struct{ status, reason, message string }{
		ConditionAdmitted:      {"False", "QueueNotAllowed", "not admitted: " + st.Waiting},
		ConditionPodsReady:     {"False", ReasonNotAdmitted, "the group is not admitted, so no member runs"},
		ConditionUnschedulable: {"True", "QueueNotAllowed", st.Waiting},
		ConditionImpossible:    {"False", ReasonFeasible, "nothing found rules the group out for good"},
		ConditionEvicted:       {"False", ReasonNotEvicted, "the group's current attempt was not evicted (phase Queued)"},
		ConditionFailed:        {"False", ReasonRetriesLeft, "1 failed attempt(s) of 3 retries allowed"},
	}
	for _, c := range Conditions(st) {
		w := want[c.Type]
		if got := (struct{ status, reason, message string }{string(c.Status), c.Reason, c.Message}); got != w {
			t.Errorf("%s: got %+v, want %+v", c.Type, got, w)
		}
	}
}

// TestQueueActiveCondition: a Queue is Active when its selector parses, and says why
// not when it has none (it admits no namespace) or one that does not parse.
func TestQueueActiveCondition(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	tests := []struct {
		name   string
		sel    *metav1.LabelSelector
		err    error
		want   metav1.ConditionStatus
		reason string
	}{
		{"selector", sel, nil, metav1.ConditionTrue, ReasonQueueReady},
		{"no selector", nil, nil, metav1.ConditionFalse, ReasonNoNamespaceSelector},
		{"bad selector", sel, errors.New(`spec.namespaceSelector: "In" needs values`), metav1.ConditionFalse, ReasonInvalidNamespaceSelector},
	}
	for _, tc := range tests {
		q := &musterv1alpha1.Queue{Spec: musterv1alpha1.QueueSpec{NamespaceSelector: tc.sel}}
		c := activeCondition(q, map[string]bool{"a": true}, tc.err)
		if c.Type != QueueConditionActive || c.Status != tc.want || c.Reason != tc.reason || c.Message == "" {
			t.Errorf("%s: got %+v, want Active=%s reason %s with a message", tc.name, c, tc.want, tc.reason)
		}
	}
}

// TestBindJobRecordsThePlansBindSteps: the plan a job records (the muster.dev/placement
// annotation) names every member of a bind step with its node and UID, and a step whose
// pod the loop has not seen is carried without a pod, for the binder to report failed.
func TestBindJobRecordsThePlansBindSteps(t *testing.T) {
	pods := map[string]*corev1.Pod{
		"ns/w-0": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w-0", UID: "u0"}},
		"ns/w-1": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w-1", UID: "u1"}},
	}
	plan := engine.Plan{Group: "Labels/ns/w", Attempt: 2, Steps: []engine.Step{
		{Kind: engine.StepBind, Pod: "ns/w-0", Node: "n-0"},
		{Kind: engine.StepBind, Pod: "ns/w-1", Node: "n-1"},
		{Kind: engine.StepBind, Pod: "ns/gone", Node: "n-2"},
	}}
	job := newBindJob(plan, func(key string) *corev1.Pod { return pods[key] })
	want := Plan{Group: "Labels/ns/w", Attempt: 2, Pods: map[string]Assignment{
		"w-0": {Node: "n-0", UID: "u0"}, "w-1": {Node: "n-1", UID: "u1"},
	}}
	if d := cmp.Diff(want, job.record); d != "" {
		t.Errorf("the recorded plan (-want +got):\n%s", d)
	}
	if len(job.pods) != 3 || job.pods[2] != nil {
		t.Errorf("expected a pod per step, the last nil, found %v", job.pods)
	}
}

// TestPlanWithAnUnknownStepIsNotStarted: a plan with a step of a kind the binder does
// not carry out binds no member (the binder has no client here: a bind would panic) and
// reports every member failed, once, for the engine to place anew.
func TestPlanWithAnUnknownStepIsNotStarted(t *testing.T) {
	b := &binder{kit: &kit{}, signer: signer{key: make([]byte, signingKeyBytes)}}
	plan := engine.Plan{Group: "Labels/ns/w", Attempt: 1, Steps: []engine.Step{
		{Kind: "WriteClaim", Pod: "ns/w-0"},
		{Kind: engine.StepBind, Pod: "ns/w-0", Node: "n-0"},
	}}
	job := newBindJob(plan, func(string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w-0"}}
	})
	failed := b.execute(context.Background(), job)
	if d := cmp.Diff([]string{"ns/w-0"}, failed); d != "" {
		t.Errorf("failed steps (-want +got):\n%s", d)
	}
}

// TestRequestConfigBoundsRequests: muster's clientset and dynamic client bound each
// request by requestTimeout, and keep a timeout the kubeconfig sets.
func TestRequestConfigBoundsRequests(t *testing.T) {
	if got := requestConfig(&rest.Config{Host: "https://api"}).Timeout; got != requestTimeout {
		t.Errorf("a config without a timeout: expected %s, found %s", requestTimeout, got)
	}
	if got := requestConfig(&rest.Config{Host: "https://api", Timeout: 5 * time.Second}).Timeout; got != 5*time.Second {
		t.Errorf("a config with a timeout of 5s: expected it kept, found %s", got)
	}
}

// TestStatusMessagesRefreshLessOftenAtDepth: a group whose state is unchanged has its
// status written again after messageRefresh, or after refreshEvery of the groups
// written when they are many; a change of state is due at once.
func TestStatusMessagesRefreshLessOftenAtDepth(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	waiting := engine.Brief{Phase: lifecycle.Queued, Reason: lifecycle.ReasonUnschedulable, WaitingKind: "Unschedulable"}
	admitted := engine.Brief{Phase: lifecycle.Binding}
	for _, tc := range []struct {
		groups int
		after  time.Duration
		st     engine.Brief
		want   bool
	}{
		{1, messageRefresh - time.Second, waiting, false},
		{1, messageRefresh, waiting, true},
		{3000, messageRefresh, waiting, false}, // 3,000 groups: every 30 s
		{3000, 29 * time.Second, waiting, false},
		{3000, 30 * time.Second, waiting, true},
		{3000, time.Second, admitted, true},
	} {
		clk := clocktesting.NewFakeClock(t0)
		r := &reporter{kit: &kit{clock: clk}, significant: map[string]string{"ns/g": significance(waiting)}, wroteAt: map[string]time.Time{}}
		for i := range tc.groups - 1 {
			r.wroteAt["ns/g-"+strconv.Itoa(i)] = t0
		}
		r.wroteAt["ns/g"] = t0 // the groups written are tc.groups
		clk.Step(tc.after)
		if got := r.due("ns/g", tc.st); got != tc.want {
			t.Errorf("%d groups, %v after the last write, phase %s: due %t, expected %t", tc.groups, tc.after, tc.st.Phase, got, tc.want)
		}
	}
}
