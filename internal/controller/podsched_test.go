package controller

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/metrics"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
	"github.com/muster-sched/muster/internal/source"
)

// TestPodScheduledFor: only a group that does not fit the nodes makes its pending
// members Unschedulable, the reason autoscalers add nodes for; a group waiting on its
// queue, a reservation or a preemption says so with its own reason; an admitted group's
// members are left to the binding; any other says why it does not wait only where a
// member still says Unschedulable.
func TestPodScheduledFor(t *testing.T) {
	const fits = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu"
	placed := func(code placement.Code) *queue.Reason {
		return &queue.Reason{Kind: queue.Placement, Diagnosis: &placement.Diagnosis{Code: code}}
	}
	tests := []struct {
		name     string
		st       engine.Status
		want     podCond
		wantMode condMode
	}{
		{"does not fit now", engine.Status{Phase: lifecycle.Queued, Wait: placed(placement.Unschedulable), WaitingKind: "Unschedulable", Waiting: fits},
			podCond{corev1.PodReasonUnschedulable, fits}, writeCond},
		{"does not fit even empty nodes", engine.Status{Phase: lifecycle.Impossible, Wait: placed(placement.Impossible), WaitingKind: "Impossible", Waiting: fits},
			podCond{corev1.PodReasonUnschedulable, fits}, writeCond},
		{"over quota", engine.Status{Phase: lifecycle.Queued, Wait: &queue.Reason{Kind: queue.QuotaExceeded}, WaitingKind: "QuotaExceeded", Waiting: "needs 2 nvidia.com/gpu, queue q has 3 of 4 in use"},
			podCond{"QuotaExceeded", "needs 2 nvidia.com/gpu, queue q has 3 of 4 in use"}, writeCond},
		{"more than the queue's whole quota", engine.Status{Phase: lifecycle.Impossible, Wait: &queue.Reason{Kind: queue.QuotaNeverEnough}, WaitingKind: "QuotaNeverEnough", Waiting: "needs 8"},
			podCond{"QuotaNeverEnough", "needs 8"}, writeCond},
		{"no such queue", engine.Status{Phase: lifecycle.Queued, Wait: &queue.Reason{Kind: queue.QueueNotFound}, WaitingKind: "QueueNotFound", Waiting: "queue x not found"},
			podCond{"QueueNotFound", "queue x not found"}, writeCond},
		{"nodes reserved for a starving group", engine.Status{Phase: lifecycle.Queued, Wait: &queue.Reason{Kind: queue.Reserved}, WaitingKind: "Reserved", Waiting: "reserved for ns/big"},
			podCond{"Reserved", "reserved for ns/big"}, writeCond},
		{"preempting for it", engine.Status{Phase: lifecycle.Queued, Wait: placed(placement.Unschedulable), WaitingKind: "Unschedulable", Waiting: fits + "; preempting 1 group(s)", Preempting: []string{"ns/low"}},
			podCond{ReasonPreempting, fits + "; preempting 1 group(s)"}, writeCond},
		{"invalid", engine.Status{Invalid: "spec.minMember: 0: must be at least 1"},
			podCond{ReasonInvalidGroup, "spec.minMember: 0: must be at least 1"}, writeCond},
		{"binding", engine.Status{Phase: lifecycle.Binding}, podCond{}, leaveAlone},
		{"running", engine.Status{Phase: lifecycle.Running}, podCond{}, leaveAlone},
		{"gathering", engine.Status{Phase: lifecycle.Gathering, Reason: lifecycle.ReasonMembersMissing, Message: "1 of 2"},
			podCond{lifecycle.ReasonMembersMissing, "1 of 2"}, correctStale},
		{"queued, not decided yet", engine.Status{Phase: lifecycle.Queued, Reason: lifecycle.ReasonUnschedulable, Message: fits},
			podCond{ReasonNotWaiting, fits}, correctStale},
		{"not seen whole", engine.Status{}, podCond{ReasonPending, "waiting for the group's object and members"}, correctStale},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, mode := podScheduledFor(tc.st)
			if diff := cmp.Diff(tc.want, got); diff != "" || mode != tc.wantMode {
				t.Errorf("condition (-want +got):\n%s\nmode: expected %d, found %d", diff, tc.wantMode, mode)
			}
		})
	}
}

// TestDecideHoldsBackMessages: a waiting group's members get a new message at once
// when the reason changes, and otherwise at most once per messageRefresh, or per
// refreshEvery of the groups decided when they are more than messageRefreshRate ×
// messageRefresh.
func TestDecideHoldsBackMessages(t *testing.T) {
	for n, want := range map[int]time.Duration{0: messageRefresh, 1000: messageRefresh, 2000: 20 * time.Second, 10500: 105 * time.Second} {
		if got := refreshEvery(n); got != want {
			t.Errorf("refreshEvery(%d): expected %v, found %v", n, want, got)
		}
	}
	a := podCond{corev1.PodReasonUnschedulable, "0/2 nodes are available"}
	b := podCond{corev1.PodReasonUnschedulable, "0/3 nodes are available"}
	quota := podCond{"QuotaExceeded", "needs 2"}
	type step struct {
		after    time.Duration
		in, want podCond
	}
	for _, tc := range []struct {
		name   string
		others int // groups decided besides ns/g
		steps  []step
	}{
		{"a few groups", 0, []step{
			{0, a, a},
			{time.Second, b, a}, // same reason, within messageRefresh: held back
			{messageRefresh, b, b},
			{time.Second, quota, quota}, // another reason: at once
			{time.Second, a, a},
		}},
		{"3,000 groups", 2999, []step{ // 30 s between refreshes
			{0, a, a},
			{messageRefresh, b, a},
			{19 * time.Second, b, a},
			{time.Second, b, b},
			{time.Second, quota, quota},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
			w := &podScheduled{kit: &kit{clock: clk}, decided: map[string]decidedCond{}}
			for i := range tc.others {
				w.decided["ns/other-"+strconv.Itoa(i)] = decidedCond{}
			}
			for i, s := range tc.steps {
				clk.Step(s.after)
				if got := w.decide("ns/g", s.in); got != s.want {
					t.Errorf("step %d: expected %+v, found %+v", i, s.want, got)
				}
			}
		})
	}
}

// TestPodCondPatch: the patch names the pod's resourceVersion, so that it fails on a
// pod bound since; the transition time moves only when the status does.
func TestPodCondPatch(t *testing.T) {
	now := time.Unix(2_000_000, 0)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	cond := podCond{corev1.PodReasonUnschedulable, "0/2 nodes are available"}
	tests := []struct {
		name    string
		current []corev1.PodCondition
		since   metav1.Time
	}{
		{"no condition", nil, metav1.NewTime(now)},
		{"False already", []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "QuotaExceeded", LastTransitionTime: earlier}}, earlier},
		{"True", []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: earlier}}, metav1.NewTime(now)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"}, Status: corev1.PodStatus{Conditions: tc.current}}
			want := map[string]any{
				"metadata": map[string]any{"resourceVersion": "42"},
				"status": map[string]any{"conditions": []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: cond.Reason, Message: cond.Message, LastTransitionTime: tc.since,
				}}},
			}
			if diff := cmp.Diff(want, podCondPatch(p, cond, now)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCarries: a pod carries a condition when its PodScheduled is False with the same
// reason and message.
func TestCarries(t *testing.T) {
	cond := podCond{corev1.PodReasonUnschedulable, "m"}
	pod := func(c ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: c}}
	}
	tests := []struct {
		name          string
		p             *corev1.Pod
		carries, says bool
	}{
		{"none", pod(), false, false},
		{"same", pod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: cond.Reason, Message: "m"}), true, true},
		{"older message", pod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: cond.Reason, Message: "old"}), false, true},
		{"bound", pod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}), false, false},
		{"other type", pod(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: cond.Reason, Message: "m"}), false, false},
	}
	for _, tc := range tests {
		if got := carries(tc.p, cond); got != tc.carries {
			t.Errorf("%s: carries: expected %t, found %t", tc.name, tc.carries, got)
		}
		if got := saysUnschedulable(tc.p); got != tc.says {
			t.Errorf("%s: saysUnschedulable: expected %t, found %t", tc.name, tc.says, got)
		}
	}
}

// podSchedFixture is a podScheduled over an engine with one 1-GPU node and a group
// of two 1-GPU members, which does not fit: its members are to be Unschedulable.
type podSchedFixture struct {
	w    *podScheduled
	eng  *engine.Engine
	key  string
	pods []*corev1.Pod
}

func newPodSchedFixture(t *testing.T) *podSchedFixture {
	t.Helper()
	cfg := musterv1alpha1.DefaultConfiguration()
	k := &kit{cfg: cfg, clock: clocktesting.NewFakeClock(sim.Epoch), metrics: metrics.New(prometheus.NewRegistry())}
	eng := sim.NewEngine()
	eng.SetNode(gt.Node("n-0").GPU(1).Obj())
	f := &podSchedFixture{eng: eng, key: "Coscheduling/default/g"}
	eng.SetGroup(engine.GroupSpec{Key: f.key, Source: engine.Coscheduling, Namespace: "default", Name: "g", MinMember: 2})
	m := newMirror(k, eng, nil, nil)
	m.members[f.key] = map[string]*corev1.Pod{}
	for _, name := range []string{"g-0", "g-1"} {
		p := gt.Pod(name).GPU(1).Obj()
		p.Spec.SchedulerName, p.Status.Phase, p.ResourceVersion = cfg.SchedulerName, corev1.PodPending, "1"
		eng.SetPod(p, f.key)
		m.members[f.key][podKey(p)] = p
		f.pods = append(f.pods, p)
	}
	f.w = newPodScheduled(k, eng, m)
	t.Cleanup(f.w.writes.ShutDown)
	return f
}

// send plays the writer for every queued write: it takes it and records it written
// against resourceVersion from, and returns the conditions taken by pod key.
func (f *podSchedFixture) send(t *testing.T, from string) map[string]podCond {
	t.Helper()
	sent := map[string]podCond{}
	for f.w.writes.Len() > 0 {
		item, _ := f.w.writes.Get()
		if wc := f.w.take(item); wc != nil && f.w.current(item, wc, from) {
			sent[item.pod] = wc.cond
		}
		f.w.writes.Done(item)
	}
	return sent
}

// TestSyncWritesOncePerChange: the members of a group that does not fit are queued
// once each, with the group's waiting reason; a pass that changes nothing, or that
// comes before the informer shows the write, queues nothing; a member seen carrying
// the condition, or bound, has nothing queued; a member whose pod changed under a
// write that did not land is queued again.
func TestSyncWritesOncePerChange(t *testing.T) {
	f := newPodSchedFixture(t)
	out := f.eng.Step(sim.Epoch)
	st, _ := f.eng.Group(f.key)
	want := podCond{corev1.PodReasonUnschedulable, st.Waiting}
	if st.Waiting == "" {
		t.Fatalf("expected the group to wait, found phase %s", st.Phase)
	}
	f.w.sync(out.Events, nil)
	f.w.sync(nil, f.eng.Groups())
	if got := f.send(t, "1"); !cmp.Equal(got, map[string]podCond{"default/g-0": want, "default/g-1": want}) {
		t.Fatalf("first pass: expected both members' Unschedulable, queued once, found %+v", got)
	}
	f.w.sync(nil, f.eng.Groups())
	if n := f.w.writes.Len(); n != 0 {
		t.Errorf("a pass before the informer shows the writes queued %d more", n)
	}
	seen := f.pods[0].DeepCopy()
	seen.ResourceVersion = "2"
	seen.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: want.Reason, Message: want.Message}}
	f.w.mirror.members[f.key]["default/g-0"] = seen
	other := f.pods[1].DeepCopy()
	other.ResourceVersion = "3" // changed, and not by muster's write
	f.w.mirror.members[f.key]["default/g-1"] = other
	f.w.sync(nil, f.eng.Groups())
	if got := f.send(t, "3"); !cmp.Equal(got, map[string]podCond{"default/g-1": want}) {
		t.Errorf("after the informer saw g-0 written and g-1 changed: expected g-1 queued again, found %+v", got)
	}
	if _, ok := f.w.wanted[f.key]["default/g-0"]; ok {
		t.Errorf("g-0 carries its condition, yet a write is kept for it")
	}
	bound := other.DeepCopy()
	bound.Spec.NodeName = "n-0"
	f.w.mirror.members[f.key]["default/g-1"] = bound
	f.w.mirror.members[f.key]["default/g-0"] = seen
	f.w.sync(nil, f.eng.Groups())
	if n, kept := f.w.writes.Len(), len(f.w.wanted[f.key]); n != 0 || kept != 0 {
		t.Errorf("with g-0 written and g-1 bound: expected nothing queued or kept, found %d queued, %d kept", n, kept)
	}
}

// TestWantSupersedes: a newer condition for a pod replaces its queued older one
// without a second queued write, and is counted; a write taken by the writer that a
// newer condition replaced is not sent.
func TestWantSupersedes(t *testing.T) {
	f := newPodSchedFixture(t)
	p := f.pods[0]
	a, b := podCond{"QuotaExceeded", "needs 2"}, podCond{corev1.PodReasonUnschedulable, "0/1 nodes are available"}
	f.w.mu.Lock()
	f.w.wanted[f.key] = map[string]*wantedCond{"default/g-0": f.w.want(f.key, "default/g-0", p, a)}
	f.w.wanted[f.key]["default/g-0"] = f.w.want(f.key, "default/g-0", p, b)
	f.w.mu.Unlock()
	if n := f.w.writes.Len(); n != 1 {
		t.Fatalf("expected one queued write for the pod, found %d", n)
	}
	if n := testutil.ToFloat64(f.w.metrics.PodScheduledDropped.WithLabelValues("superseded")); n != 1 {
		t.Errorf("expected 1 superseded write counted, found %v", n)
	}
	item, _ := f.w.writes.Get()
	wc := f.w.take(item)
	if wc == nil || wc.cond != b {
		t.Fatalf("expected the writer to take the newer condition %+v, found %+v", b, wc)
	}
	f.w.mu.Lock()
	f.w.wanted[f.key]["default/g-0"] = f.w.want(f.key, "default/g-0", p, a)
	f.w.mu.Unlock()
	if f.w.current(item, wc, "1") {
		t.Errorf("a write replaced while the writer waited for its budget is still current")
	}
	f.w.writes.Done(item)
	if n := f.w.writes.Len(); n != 1 {
		t.Errorf("expected the newer condition queued after the replaced one, found %d queued", n)
	}
}

// TestNoteGivesWayToTheEngine: a note (GroupNotFound on a pod whose PodGroup muster has
// not seen) is queued for the writer, not written by the caller; it stays while the
// engine knows the pod's group only by its pods, and gives way to the engine's condition
// once the engine has the group's object.
func TestNoteGivesWayToTheEngine(t *testing.T) {
	f := newPodSchedFixture(t)
	notFound := podCond{source.ReasonGroupNotFound, "PodGroup default/g does not exist"}
	// The pods of a group whose object is not seen: the engine has them, and no phase.
	const unseen = "Coscheduling/default/unseen"
	p := gt.Pod("u-0").GPU(1).Obj()
	p.Spec.SchedulerName, p.Status.Phase, p.ResourceVersion = f.w.cfg.SchedulerName, corev1.PodPending, "1"
	f.eng.SetPod(p, unseen)
	f.w.mirror.members[unseen] = map[string]*corev1.Pod{podKey(p): p}
	f.w.note(unseen, p, notFound)
	f.w.sync(nil, []string{unseen})
	if got := f.send(t, "1"); !cmp.Equal(got, map[string]podCond{"default/u-0": notFound}) {
		t.Errorf("a note on a pod of a group the engine has no object of: expected it sent, found %+v", got)
	}

	// A note queued for a member of a group whose object the engine has: the engine's
	// condition replaces it, and podNotes forgets it said it.
	f.w.mirror.notes.said["default/g-0"] = notFound.Reason + "\x00" + notFound.Message
	f.w.note(f.key, f.pods[0], notFound)
	out := f.eng.Step(sim.Epoch)
	f.w.sync(out.Events, nil)
	var sent []string
	for f.w.writes.Len() > 0 {
		item, _ := f.w.writes.Get()
		if wc := f.w.take(item); wc != nil && f.w.current(item, wc, "1") {
			sent = append(sent, item.pod+" "+wc.cond.Reason)
		}
		f.w.writes.Done(item)
	}
	if want := []string{"default/g-0 Unschedulable", "default/g-1 Unschedulable"}; !cmp.Equal(sent, want) {
		t.Errorf("once the engine has the group's object: expected the writes %q, found %q", want, sent)
	}
	if said, ok := f.w.mirror.notes.said["default/g-0"]; ok {
		t.Errorf("once the engine has the group's object: podNotes still holds %q as said on g-0, and would not say it again", said)
	}
}
