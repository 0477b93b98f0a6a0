package engine_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// TestExpectedStartAfterRepelledPods: nodes n-0 and n-1 of 2 GPUs; job excl runs one
// 1-GPU pod on n-0 for an hour, and a job holds all of n-1's GPUs for three. A queued
// one-GPU member kept off excl's node by required pod anti-affinity over the hostname,
// its own (excl's pods repel it) or excl's (it repels the member's labels, as JobSet's
// exclusive placement does), may not use the GPU free on n-0 while excl runs there: it
// is expected to start in an hour, when excl ends, not at once.
func TestExpectedStartAfterRepelledPods(t *testing.T) {
	for _, tc := range []struct {
		name         string
		excl, queued func(*gt.PodBuilder) *gt.PodBuilder
	}{{
		name:   "its anti-affinity",
		excl:   func(b *gt.PodBuilder) *gt.PodBuilder { return b },
		queued: func(b *gt.PodBuilder) *gt.PodBuilder { return b.AntiAffinity("job", "excl", corev1.LabelHostname) },
	}, {
		name:   "the running pod's anti-affinity",
		excl:   func(b *gt.PodBuilder) *gt.PodBuilder { return b.AntiAffinity("team", "a", corev1.LabelHostname) },
		queued: func(b *gt.PodBuilder) *gt.PodBuilder { return b.Label("team", "a") },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngineWith(0)
			e.SetNode(gt.Node("n-0").GPU(2).Obj())
			e.SetNode(gt.Node("n-1").GPU(2).Obj())
			now := sim.Epoch
			runFor(e, "excl", tc.excl(gt.Pod("excl-0").GPU(1).Label("job", "excl").Node("n-0")).Obj(), "1h")
			occupyForThreeHours(e, "n-1")
			e.Step(now)
			anti := "Coscheduling/default/anti"
			e.SetGroup(engine.GroupSpec{Key: anti, Source: engine.Coscheduling, Namespace: "default", Name: "anti", MinMember: 1})
			e.SetPod(tc.queued(gt.Pod("anti-0").GPU(1).Label("job", "anti")).Obj(), anti)
			expectQueuedForAnHour(t, e, anti, now, "n-0 has a GPU free, but excl's pod keeps the member off it")
		})
	}
}

// TestExpectedStartBesideAForeignPod: n-0 and n-1 of 2 GPUs; a job holds one of n-0's
// GPUs for an hour, and another all of n-1's for three; a pod that is not muster's,
// labelled job=excl, runs on n-0 with no GPU. A queued 2-GPU member that repels job=excl
// by hostname may never use n-0 while that pod runs (nobody said it ends): it is
// expected to start on n-1 in three hours. Once the pod is gone, the next forecast finds
// the member's nodes again, and it is expected to start on n-0 in an hour.
func TestExpectedStartBesideAForeignPod(t *testing.T) {
	e := sim.NewEngineWith(0)
	e.SetNode(gt.Node("n-0").GPU(2).Obj())
	e.SetNode(gt.Node("n-1").GPU(2).Obj())
	now := sim.Epoch
	runFor(e, "half", gt.Pod("half-0").GPU(1).Node("n-0").Obj(), "1h")
	occupyForThreeHours(e, "n-1")
	foreign := gt.Pod("foreign").Label("job", "excl").Node("n-0").Obj()
	foreign.Status.Phase = corev1.PodRunning
	e.SetPod(foreign, "")
	e.Step(now)
	anti := "Coscheduling/default/anti"
	e.SetGroup(engine.GroupSpec{Key: anti, Source: engine.Coscheduling, Namespace: "default", Name: "anti", MinMember: 1})
	e.SetPod(gt.Pod("anti-0").GPU(2).AntiAffinity("job", "excl", corev1.LabelHostname).Obj(), anti)
	now = now.Add(sim.SimForecastEvery)
	if out := e.Step(now); len(out.Binds()) != 0 {
		t.Fatalf("binds %+v, want none: no node has 2 GPUs free", out.Binds())
	}
	if st, _ := e.Group(anti); !st.ExpectedStart.Equal(sim.Epoch.Add(3 * time.Hour)) {
		t.Errorf("expected start %v (%q), want in 3 hours, on n-1: the foreign pod keeps it off n-0 for ever", st.ExpectedStart, st.ExpectedStartUnknown)
	}
	e.RemovePod("default/foreign")
	expectQueuedForAnHour(t, e, anti, now, "the foreign pod is gone: n-0 frees a GPU in an hour")
}

// occupyForThreeHours runs group occupy's one pod on node, holding its 2 GPUs, expected
// to run for three hours.
func occupyForThreeHours(e *engine.Engine, node string) {
	runFor(e, "occupy", gt.Pod("occupy-0").GPU(2).Node(node).Obj(), "3h")
}

// runFor adds group name of one member, p, Running and Ready, that declares runtime.
func runFor(e *engine.Engine, name string, p *corev1.Pod, runtime string) {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1})
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[engine.AnnotationExpectedRuntime] = runtime
	e.SetPod(p, key)
}
