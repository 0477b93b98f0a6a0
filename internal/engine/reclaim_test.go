package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// cohortEngine returns an engine of four one-GPU nodes and two queues, team-a and
// team-b, of two GPUs each, in cohort research.
func cohortEngine() *engine.Engine {
	e := oneGPUEngine(4)
	for _, q := range []string{"team-a", "team-b"} {
		e.SetQueue(engine.Queue{Queue: queue.Queue{Name: q, Quota: cluster.Resources{gt.GPU: 2}, Cohort: "research"}})
	}
	return e
}

// queuedIn adds a group of priority prio in queue q with one unbound member of one GPU.
func queuedIn(e *engine.Engine, name, q string, prio int32) string {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1,
		Priority: prio, Queue: q})
	e.SetPod(gt.Pod(name+"-0").GPU(1).Obj(), key)
	return key
}

// TestReclaimWithinCohort: team-a borrows team-b's idle quota; a team-b group, of lower
// priority than team-a's, takes it back by evicting the team-a group admitted last;
// while that group stops, team-a may not borrow the freed GPU again; once it is gone the
// team-b group is bound there, and team-a, over its quota, reclaims nothing back.
func TestReclaimWithinCohort(t *testing.T) {
	e := cohortEngine()
	now := sim.Epoch
	var a []string
	for i, name := range []string{"a1", "a2", "a3", "a4"} {
		a = append(a, queuedIn(e, name, "team-a", 5))
		out := e.Step(now)
		wantBinds(t, name+" borrows", out, engine.Bind{Group: a[i], Pod: "default/" + name + "-0", Node: out.Binds()[0].Node})
		e.SetPod(runningPod(name+"-0", out.Binds()[0].Node), a[i])
		now = now.Add(time.Second)
	}
	e.Step(now)

	b1 := queuedIn(e, "b1", "team-b", 0)
	now = now.Add(time.Second)
	out := e.Step(now)
	want := []engine.Eviction{{Group: a[3], Pod: "default/a4-0", Reason: lifecycle.ReasonPreempted,
		Message: "reclaimed by queue team-b of cohort research for " + b1}}
	if d := cmp.Diff(want, out.Evictions); d != "" {
		t.Fatalf("evictions (-want +got):\n%s", d)
	}
	if !slices.ContainsFunc(out.Events, func(ev engine.Event) bool { return ev.Group == b1 && ev.Reason == "Reclaiming" }) {
		t.Errorf("expected a Reclaiming event on %s, found %+v", b1, out.Events)
	}

	// a4 stops; a5 of team-a may not borrow meanwhile, whatever its priority.
	a5 := queuedIn(e, "a5", "team-a", 10)
	now = now.Add(time.Second)
	out = e.Step(now)
	if len(out.Evictions) != 0 || len(out.Binds()) != 0 {
		t.Fatalf("while a4 stops: evictions %+v, binds %+v; want none", out.Evictions, out.Binds())
	}
	if st, _ := e.Group(b1); !strings.Contains(st.Waiting, "preempting 1 group(s) that borrow its queue's quota, which are releasing their nodes: "+a[3]) {
		t.Errorf("b1's status: expected it to say whom it reclaims from, found %q", st.Waiting)
	}
	if st, _ := e.Group(a5); st.WaitingKind != "QuotaExceeded" {
		t.Errorf("a5: expected it to wait on quota, found %s: %s", st.WaitingKind, st.Waiting)
	}

	node := "n-3"
	out, now = podGone(e, "default/a4-0", now)
	wantBinds(t, "once a4 is gone", out, engine.Bind{Group: b1, Pod: "default/b1-0", Node: node})
	e.SetPod(runningPod("b1-0", node), b1)
	out = e.Step(now.Add(time.Second))
	if len(out.Evictions) != 0 || len(out.Binds()) != 0 {
		t.Fatalf("team-a is over its quota and reclaims nothing: evictions %+v, binds %+v; want none", out.Evictions, out.Binds())
	}
	if st, _ := e.Group(a[3]); st.Phase == lifecycle.Backoff || st.Failures != 0 {
		t.Errorf("a4: expected it requeued at once (no Backoff), without a failure, found %s with %d failures", st.Phase, st.Failures)
	}
}

// TestReclaimSparesQueuesBorrowingOtherResources: team-c holds its one GPU within its
// quota and borrows cpu; team-a borrows a GPU. Team b, short of GPUs, reclaims from team
// a, although team c's group is the least valuable (admitted last).
func TestReclaimSparesQueuesBorrowingOtherResources(t *testing.T) {
	e := oneGPUEngine(4)
	for _, q := range []engine.Queue{
		{Queue: queue.Queue{Name: "team-a", Quota: cluster.Resources{gt.GPU: 1, corev1.ResourceCPU: 100000}}},
		{Queue: queue.Queue{Name: "team-b", Quota: cluster.Resources{gt.GPU: 2}}},
		{Queue: queue.Queue{Name: "team-c", Quota: cluster.Resources{gt.GPU: 1, corev1.ResourceCPU: 1000}}},
	} {
		q.Cohort = "research"
		e.SetQueue(q)
	}
	now := sim.Epoch
	admit := func(name, q string, cpu string) string {
		key := "Coscheduling/default/" + name
		e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1, Queue: q})
		pod := gt.Pod(name + "-0").GPU(1)
		if cpu != "" {
			pod.Req(corev1.ResourceCPU, cpu)
		}
		e.SetPod(pod.Obj(), key)
		out := e.Step(now)
		if len(out.Binds()) != 1 {
			t.Fatalf("%s: expected it bound, found %+v", name, out.Binds())
		}
		p := pod.Node(out.Binds()[0].Node).Obj()
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		e.SetPod(p, key)
		now = now.Add(time.Second)
		return key
	}
	admit("a1", "team-a", "")
	a2 := admit("a2", "team-a", "")
	admit("c1", "team-c", "2")
	e.Step(now)

	b1 := "Coscheduling/default/b1"
	e.SetGroup(engine.GroupSpec{Key: b1, Source: engine.Coscheduling, Namespace: "default", Name: b1, MinMember: 2, Queue: "team-b"})
	e.SetPod(gt.Pod("b1-0").GPU(1).Obj(), b1)
	e.SetPod(gt.Pod("b1-1").GPU(1).Obj(), b1)
	out := e.Step(now.Add(time.Second))
	var evicted []string
	for _, ev := range out.Evictions {
		evicted = append(evicted, ev.Group)
	}
	if !slices.Equal(evicted, []string{a2}) {
		t.Errorf("evicted %v, expected team-a's a2 alone", evicted)
	}
}

// TestNoReclaimWithPreemptionOff: with preemption off, team-b's group waits for team-a's
// borrowing groups to finish instead of evicting one.
func TestNoReclaimWithPreemptionOff(t *testing.T) {
	e := engine.New(engine.Config{DefaultQueue: "default", Policy: lifecycle.DefaultPolicy(), DisablePreemption: true})
	for _, node := range gt.Nodes("n", 4, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1) }) {
		e.SetNode(node)
	}
	for _, q := range []string{"team-a", "team-b"} {
		e.SetQueue(engine.Queue{Queue: queue.Queue{Name: q, Quota: cluster.Resources{gt.GPU: 2}, Cohort: "research"}})
	}
	now := sim.Epoch
	for _, name := range []string{"a1", "a2", "a3", "a4"} {
		key := queuedIn(e, name, "team-a", 0)
		out := e.Step(now)
		if len(out.Binds()) != 1 {
			t.Fatalf("%s: expected it bound, found %+v", name, out.Binds())
		}
		e.SetPod(runningPod(name+"-0", out.Binds()[0].Node), key)
		now = now.Add(time.Second)
	}
	b1 := queuedIn(e, "b1", "team-b", 0)
	if out := e.Step(now.Add(time.Second)); len(out.Evictions) != 0 {
		t.Fatalf("expected no eviction with preemption off, found %+v", out.Evictions)
	}
	if st, _ := e.Group(b1); st.WaitingKind != "QuotaExceeded" || strings.Contains(st.Waiting, "reclaimed") {
		t.Errorf("b1: expected it to wait on quota without a promise of reclaim, found %s: %q", st.WaitingKind, st.Waiting)
	}
}

// TestReclaimTakesFromTheQueueBorrowingMost: team-a borrows 3 GPUs and team-c 1; team-b
// reclaims 1. The GPU comes from team-a, although team-c's borrowing group was admitted
// last (the least valuable by age).
func TestReclaimTakesFromTheQueueBorrowingMost(t *testing.T) {
	e := oneGPUEngine(10)
	for q, quota := range map[string]int64{"team-a": 2, "team-b": 6, "team-c": 2} {
		e.SetQueue(engine.Queue{Queue: queue.Queue{Name: q, Quota: cluster.Resources{gt.GPU: quota}, Cohort: "research"}})
	}
	now := sim.Epoch
	admitted := map[string]string{}
	for _, g := range []struct{ name, queue string }{
		{"a1", "team-a"}, {"a2", "team-a"}, {"a3", "team-a"}, {"a4", "team-a"}, {"a5", "team-a"},
		{"c1", "team-c"}, {"c2", "team-c"}, {"c3", "team-c"},
	} {
		key := queuedIn(e, g.name, g.queue, 0)
		out := e.Step(now)
		if len(out.Binds()) != 1 {
			t.Fatalf("%s: expected it bound, found %+v", g.name, out.Binds())
		}
		e.SetPod(runningPod(g.name+"-0", out.Binds()[0].Node), key)
		admitted[g.name] = key
		now = now.Add(time.Second)
	}
	b1 := "Coscheduling/default/b1"
	e.SetGroup(engine.GroupSpec{Key: b1, Source: engine.Coscheduling, Namespace: "default", Name: "b1", MinMember: 3, Queue: "team-b"})
	for i := range 3 {
		e.SetPod(gt.Pod(fmt.Sprintf("b1-%d", i)).GPU(1).Obj(), b1)
	}
	out := e.Step(now.Add(time.Second))
	var evicted []string
	for _, ev := range out.Evictions {
		evicted = append(evicted, ev.Group)
	}
	if !slices.Equal(evicted, []string{admitted["a5"]}) {
		t.Errorf("evicted %v, expected team-a's a5 alone", evicted)
	}
}
