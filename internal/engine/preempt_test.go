package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// oneGPUEngine returns an engine with n nodes n-0, n-1, ... of one GPU each.
func oneGPUEngine(n int) *engine.Engine {
	e := sim.NewEngine()
	for _, node := range gt.Nodes("n", n, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1) }) {
		e.SetNode(node)
	}
	return e
}

// podGone removes pod from the engine a second after now and steps it; it returns the
// step's output and its time.
func podGone(e *engine.Engine, pod string, now time.Time) (engine.Output, time.Time) {
	e.RemovePod(pod)
	now = now.Add(time.Second)
	return e.Step(now), now
}

// wantBinds fails the test unless out bound exactly want.
func wantBinds(t *testing.T, what string, out engine.Output, want ...engine.Bind) {
	t.Helper()
	if d := cmp.Diff(want, out.Binds()); d != "" {
		t.Fatalf("%s, binds (-want +got):\n%s", what, d)
	}
}

// runningGroup adds a group of priority prio whose one member is bound to node and Ready.
func runningGroup(e *engine.Engine, name, node string, prio int32) string {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1, Priority: prio})
	e.SetPod(runningPod(name+"-0", node), key)
	return key
}

// runningPod returns a one-GPU pod bound to node, Running and Ready.
func runningPod(name, node string) *corev1.Pod {
	p := gt.Pod(name).GPU(1).Node(node).Obj()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// waitingGroup adds a group of priority prio with one unbound member of one GPU.
func waitingGroup(e *engine.Engine, name string, prio int32, never bool) string {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1, Priority: prio, PreemptNever: never})
	e.SetPod(gt.Pod(name+"-0").GPU(1).Obj(), key)
	return key
}

// TestPreemptionWaitsForItsVictims: a preemptor evicts one group and waits for it to be
// gone without evicting more; the node being freed is closed to a group of its own
// priority that came first, and to one of lower priority; once the victim's pod is gone
// the preemptor is bound there.
func TestPreemptionWaitsForItsVictims(t *testing.T) {
	e := oneGPUEngine(2)
	old := runningGroup(e, "old", "n-0", 0)
	e.Step(sim.Epoch)
	young := runningGroup(e, "young", "n-1", 0)
	now := sim.Epoch.Add(time.Minute)
	e.Step(now)

	polite := waitingGroup(e, "polite", 10, true)
	if out := e.Step(now); len(out.Evictions) != 0 {
		t.Fatalf("a group whose class may not preempt evicted %+v", out.Evictions)
	}
	now = now.Add(time.Second)
	vip := waitingGroup(e, "vip", 10, false)
	out := e.Step(now)
	want := []engine.Eviction{{Group: young, Pod: "default/young-0", Reason: lifecycle.ReasonPreempted,
		Message: "preempted by " + vip + " (priority 10)"}}
	if d := cmp.Diff(want, out.Evictions); d != "" {
		t.Fatalf("evictions (-want +got):\n%s", d)
	}
	if !slices.ContainsFunc(out.Events, func(ev engine.Event) bool { return ev.Group == vip && ev.Reason == "Preempting" }) {
		t.Errorf("expected a Preempting event on %s, found %+v", vip, out.Events)
	}

	// The victim's pod is terminating: nothing more is evicted, and nothing is bound.
	low := waitingGroup(e, "low", -1, false)
	now = now.Add(time.Second)
	out = e.Step(now)
	if len(out.Evictions) != 0 || len(out.Binds()) != 0 {
		t.Fatalf("while the victim releases its node: evictions %+v, binds %+v; want none", out.Evictions, out.Binds())
	}
	if st, _ := e.Group(vip); !slices.Equal(st.Preempting, []string{young}) {
		t.Errorf("vip's status: expected Preempting [%s], found %v (waiting: %s)", young, st.Preempting, st.Waiting)
	}
	if st, _ := e.Group(old); st.Phase != lifecycle.Running {
		t.Errorf("old: expected it spared and Running, found %s", st.Phase)
	}

	out, _ = podGone(e, "default/young-0", now)
	wantBinds(t, "once the victim is gone", out, engine.Bind{Group: vip, Pod: "default/vip-0", Node: "n-1"})
	for _, key := range []string{polite, low} {
		if st, _ := e.Group(key); st.Phase != lifecycle.Queued {
			t.Errorf("%s: expected it still queued, found %s", key, st.Phase)
		}
	}
	if st, _ := e.Group(young); st.Phase == lifecycle.Backoff || st.Failures != 0 {
		t.Errorf("young: expected it requeued at once (no Backoff), without a failure, found %s with %d failures", st.Phase, st.Failures)
	}
}

// TestPreemptionWaitsForHandedOffVictims: a victim whose state its owner keeps (muster
// suspended the Job: its pods leave the group, which leaves the engine) still holds its
// node until its pods are gone; the preemption stays in flight meanwhile, and evicts
// no other group.
func TestPreemptionWaitsForHandedOffVictims(t *testing.T) {
	e := oneGPUEngine(2)
	old := runningGroup(e, "old", "n-0", 0)
	e.Step(sim.Epoch)
	const job = "Labels/default/job"
	e.SetGroup(engine.GroupSpec{Key: job, Source: engine.Labels, Namespace: "default", Name: "job", MinMember: 1})
	p := runningPod("job-0", "n-1")
	e.SetPod(p, job)
	now := sim.Epoch.Add(time.Minute)
	e.Step(now)

	vip := waitingGroup(e, "vip", 10, false)
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Evictions) != 1 || out.Evictions[0].Group != job {
		t.Fatalf("expected the job's group preempted, found evictions %+v", out.Evictions)
	}
	e.SetPod(p, "") // the caller moves the suspended Job's pod out: it counts on its node only
	e.HandOff(job)
	if _, ok := e.Group(job); ok {
		t.Fatalf("expected the handed-off victim gone from the engine")
	}
	waitingGroup(e, "low", -1, false) // an admission pass
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Evictions) != 0 || len(out.Binds()) != 0 {
		t.Fatalf("while the victim's pod still holds its node: evictions %+v, binds %+v; want none", out.Evictions, out.Binds())
	}
	if st, _ := e.Group(old); st.Phase != lifecycle.Running {
		t.Errorf("old: expected it spared and Running, found %s", st.Phase)
	}

	e.RemovePod("default/job-0")
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Binds()) != 1 || out.Binds()[0].Group != vip || out.Binds()[0].Node != "n-1" {
		t.Fatalf("once the victim's pod is gone: expected vip bound to n-1, found %+v", out.Binds())
	}
}

// TestPreemptionsInFlightAtOnce: two preemptors of equal priority each evict a group of
// their own in one pass, without the second waiting for the first's victim to go; a
// third group, of higher priority than the victims, is spared; each preemptor is bound
// where its own victim was, in whichever order the victims go.
func TestPreemptionsInFlightAtOnce(t *testing.T) {
	e := oneGPUEngine(3)
	a := runningGroup(e, "a", "n-0", 0)
	e.Step(sim.Epoch)
	b := runningGroup(e, "b", "n-1", 0)
	c := runningGroup(e, "c", "n-2", 5)
	now := sim.Epoch.Add(time.Minute)
	e.Step(now)

	vip1 := waitingGroup(e, "vip1", 10, false)
	now = now.Add(time.Second)
	vip2 := waitingGroup(e, "vip2", 10, false)
	out := e.Step(now)
	evicted := map[string]string{}
	for _, ev := range out.Evictions {
		evicted[ev.Group] = ev.Message
	}
	want := map[string]string{b: "preempted by " + vip1 + " (priority 10)", a: "preempted by " + vip2 + " (priority 10)"}
	if d := cmp.Diff(want, evicted); d != "" {
		t.Fatalf("evictions by group (-want +got):\n%s", d)
	}
	for key, victim := range map[string]string{vip1: b, vip2: a} {
		if st, _ := e.Group(key); !slices.Equal(st.Preempting, []string{victim}) {
			t.Errorf("%s: expected Preempting [%s], found %v", key, victim, st.Preempting)
		}
	}

	// vip2's victim goes first: vip2 is bound on its node, and vip1 keeps waiting for n-1.
	out, now = podGone(e, "default/a-0", now)
	wantBinds(t, "once a is gone", out, engine.Bind{Group: vip2, Pod: "default/vip2-0", Node: "n-0"})
	if len(out.Evictions) != 0 {
		t.Fatalf("once a is gone: expected no more evictions, found %+v", out.Evictions)
	}
	out, _ = podGone(e, "default/b-0", now)
	wantBinds(t, "once b is gone", out, engine.Bind{Group: vip1, Pod: "default/vip1-0", Node: "n-1"})
	if st, _ := e.Group(c); st.Phase != lifecycle.Running {
		t.Errorf("c: expected it spared and Running, found %s", st.Phase)
	}
}

// TestPreemptorDoesNotCountOnNodesFreedForAnother: a node that one preemptor's victim
// has already left stays reserved for that preemptor while its other victims go; a
// second preemptor of the same priority, to which the queue keeps it closed, evicts a
// victim of its own instead of waiting for the node.
func TestPreemptorDoesNotCountOnNodesFreedForAnother(t *testing.T) {
	e := oneGPUEngine(4)
	a := runningGroup(e, "a", "n-0", 0)
	e.Step(sim.Epoch)
	b := "Coscheduling/default/b"
	e.SetGroup(engine.GroupSpec{Key: b, Source: engine.Coscheduling, Namespace: "default", Name: "b", MinMember: 2})
	e.SetPod(runningPod("b-0", "n-1"), b)
	e.SetPod(runningPod("b-1", "n-2"), b)
	runningGroup(e, "c", "n-3", 5)
	now := sim.Epoch.Add(time.Minute)
	e.Step(now)

	vip1 := "Coscheduling/default/vip1"
	e.SetGroup(engine.GroupSpec{Key: vip1, Source: engine.Coscheduling, Namespace: "default", Name: "vip1", MinMember: 2, Priority: 10})
	e.SetPod(gt.Pod("vip1-0").GPU(1).Obj(), vip1)
	e.SetPod(gt.Pod("vip1-1").GPU(1).Obj(), vip1)
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Evictions) != 2 || out.Evictions[0].Group != b {
		t.Fatalf("vip1: expected b's two pods evicted, found %+v", out.Evictions)
	}
	e.RemovePod("default/b-0") // n-1 is free, b-1 still holds n-2
	now = now.Add(time.Second)
	vip2 := waitingGroup(e, "vip2", 10, false)
	out := e.Step(now)
	want := []engine.Eviction{{Group: a, Pod: "default/a-0", Reason: lifecycle.ReasonPreempted,
		Message: "preempted by " + vip2 + " (priority 10)"}}
	if d := cmp.Diff(want, out.Evictions); d != "" {
		t.Fatalf("vip2's evictions (-want +got):\n%s", d)
	}
	if len(out.Binds()) != 0 {
		t.Fatalf("expected no bind on n-1 while vip1 waits for it, found %+v", out.Binds())
	}
}

// TestPreemptionTimesOut: a victim's pod that never goes (a finalizer nobody removes, a
// node that died) holds the preemption in flight only until its termination grace
// period (the default 30s) and 2 minutes have passed since the eviction. Then the
// preemption ends with a PreemptionTimedOut event naming the pod, the node is no longer
// reserved for the preemptor, and the preemptor, still waiting, preempts again: the
// other group, on the other node.
func TestPreemptionTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slack time.Duration // Config.PreemptionSlack
		want  time.Duration // the slack the deadline is reached with
	}{
		{"default slack", 0, engine.DefaultPreemptionSlack},
		{"configured slack", 10 * time.Minute, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) { testPreemptionTimesOut(t, tc.slack, tc.want) })
	}
}

// testPreemptionTimesOut: a preemption whose victim never lets its node go ends its
// victims' grace period (30 s) and want past the eviction, under Config.PreemptionSlack
// slack.
func testPreemptionTimesOut(t *testing.T, slack, want time.Duration) {
	e := engine.New(engine.Config{DefaultQueue: "default", Policy: lifecycle.DefaultPolicy(), StarvationThreshold: 10 * time.Minute,
		PreemptionSlack: slack})
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default"}})
	for _, node := range gt.Nodes("n", 2, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1) }) {
		e.SetNode(node)
	}
	old := runningGroup(e, "old", "n-0", 0)
	e.Step(sim.Epoch)
	young := runningGroup(e, "young", "n-1", 0)
	evicted := sim.Epoch.Add(time.Minute)
	e.Step(evicted)
	vip := waitingGroup(e, "vip", 10, false)
	if out := e.Step(evicted); len(out.Evictions) != 1 || out.Evictions[0].Group != young {
		t.Fatalf("evictions %+v, want young's", out.Evictions)
	}
	deadline := evicted.Add(30*time.Second + want)

	out := e.Step(deadline.Add(-time.Second))
	if len(out.Evictions) != 0 || slices.ContainsFunc(out.Events, func(ev engine.Event) bool { return ev.Reason == engine.ReasonPreemptionTimedOut }) {
		t.Fatalf("a second before the deadline: evictions %+v, events %+v; want the preemption still in flight", out.Evictions, out.Events)
	}
	if st, _ := e.Group(vip); !slices.Equal(st.Preempting, []string{young}) {
		t.Fatalf("vip a second before the deadline: Preempting %v, want [%s]", st.Preempting, young)
	}
	if out.WakeAt.IsZero() || out.WakeAt.After(deadline) {
		t.Errorf("wake at %v, want at the latest the deadline %v", out.WakeAt, deadline)
	}

	out = e.Step(deadline)
	i := slices.IndexFunc(out.Events, func(ev engine.Event) bool { return ev.Reason == engine.ReasonPreemptionTimedOut })
	if i < 0 {
		t.Fatalf("at the deadline: events %+v, want %s on %s", out.Events, engine.ReasonPreemptionTimedOut, vip)
	}
	if ev := out.Events[i]; ev.Group != vip || ev.Type != engine.Warning || !strings.Contains(ev.Message, "still hold 1 pod(s) and 0 ResourceClaim(s)") ||
		!strings.Contains(ev.Message, "default/young-0") || !strings.Contains(ev.Message, "grace period and "+want.String()) {
		t.Errorf("event %+v: want a Warning on %s naming default/young-0 and the slack %s", ev, vip, want)
	}
	evictions := []engine.Eviction{{Group: old, Pod: "default/old-0", Reason: lifecycle.ReasonPreempted, Message: "preempted by " + vip + " (priority 10)"}}
	if d := cmp.Diff(evictions, out.Evictions); d != "" {
		t.Errorf("at the deadline, evictions (-want +got):\n%s", d)
	}
	if st, _ := e.Group(vip); !slices.Equal(st.Preempting, []string{old}) {
		t.Errorf("vip at the deadline: Preempting %v, want [%s]", st.Preempting, old)
	}
}
