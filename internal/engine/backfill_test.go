package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// declaring adds a queued group of members one-GPU pods that declare run time d (none
// when zero).
func declaring(e *engine.Engine, name string, members int, d time.Duration) string {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: members})
	for i := range members {
		p := gt.Pod(fmt.Sprintf("%s-%d", name, i)).GPU(1).Obj()
		if d > 0 {
			p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: d.String()}
		}
		e.SetPod(p, key)
	}
	return key
}

// halfBusyFor1h returns an engine (starvation threshold 0) with two 2-GPU nodes, each
// with a one-GPU group running since sim.Epoch that declares an hour, and the time.
func halfBusyFor1h() (*engine.Engine, time.Time) {
	e := sim.NewEngineWith(0)
	for i := range 2 {
		e.SetNode(gt.Node(fmt.Sprintf("n-%d", i)).GPU(2).Obj())
	}
	now := sim.Epoch
	for i := range 2 {
		key := declaring(e, fmt.Sprintf("run%d", i), 1, time.Hour)
		out := e.Step(now)
		p := runningPod(fmt.Sprintf("run%d-0", i), out.Binds()[0].Node)
		p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "1h"}
		e.SetPod(p, key)
		e.Step(now)
	}
	return e, now
}

// TestBackfillWithExpectedRuntimes: two 2-GPU nodes, each with a one-GPU group running
// that declares an hour. A gang of 4 GPUs reserves both nodes (threshold 0) and is told
// it starts when they end; a group that declares 30 minutes backfills a free GPU; one
// that declares 2 hours, and one that declares nothing, wait.
func TestBackfillWithExpectedRuntimes(t *testing.T) {
	e, now := halfBusyFor1h()
	gang := declaring(e, "gang", 4, time.Hour)
	now = now.Add(sim.SimForecastEvery)
	e.Step(now)
	st, _ := e.Group(gang)
	if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
		t.Fatalf("gang: expected start %v (%q), want %v", st.ExpectedStart, st.ExpectedStartUnknown, want)
	}
	long := declaring(e, "long", 1, 2*time.Hour)
	unknown := declaring(e, "unknown", 1, 0)
	short := declaring(e, "short", 1, 30*time.Minute)
	now = now.Add(time.Second)
	out := e.Step(now)
	if len(out.Binds()) != 1 || out.Binds()[0].Group != short {
		t.Fatalf("binds %+v, want short's alone", out.Binds())
	}
	for _, key := range []string{long, unknown} {
		st, _ := e.Group(key)
		if st.Phase != lifecycle.Queued || st.ExpectedStartUnknown == "" {
			t.Errorf("%s: want it queued with why its start is unknown, found %s %q", key, st.Phase, st.ExpectedStartUnknown)
		}
	}
	if d, src := e.Runtime(unknown); d != 0 || src == "" {
		t.Errorf("unknown: run time %s (%s), want unknown with why", d, src)
	}
}

// TestEveryQueuedGroupHasAnExpectedStart: on the cluster of
// TestBackfillWithExpectedRuntimes, every queued group gets an expected start from the
// forecast, not only the one holding the reservation: the gang when the running groups
// end, and the groups behind it after the gang, since they would overlap it before. A
// group queued since the last forecast says so until the next, sim.SimForecastEvery later.
func TestEveryQueuedGroupHasAnExpectedStart(t *testing.T) {
	e, now := halfBusyFor1h()
	gang := declaring(e, "gang", 4, time.Hour)
	now = now.Add(time.Minute)
	e.Step(now)
	long := declaring(e, "long", 1, 2*time.Hour)
	unknown := declaring(e, "unknown", 1, 0)
	now = now.Add(time.Second)
	out := e.Step(now)
	st, _ := e.Group(long)
	if !st.ExpectedStart.IsZero() || st.ExpectedStartUnknown != "not forecast yet: muster forecasts the queue at most every "+sim.SimForecastEvery.String() {
		t.Errorf("long, queued since the last forecast: expected start %v (%q), want none yet", st.ExpectedStart, st.ExpectedStartUnknown)
	}
	now = now.Add(sim.SimForecastEvery)
	out = e.Step(now)
	for key, want := range map[string]time.Duration{gang: time.Hour, long: 2 * time.Hour, unknown: 2 * time.Hour} {
		st, _ := e.Group(key)
		if st.Phase != lifecycle.Queued || !st.ExpectedStart.Equal(sim.Epoch.Add(want)) {
			t.Errorf("%s: %s, expected start %v (%q), want queued, starting at %s", key, st.Phase, st.ExpectedStart, st.ExpectedStartUnknown, want)
		}
		if key != gang && !slices.Contains(out.Changed, key) {
			t.Errorf("%s: its expected start became known but it is not in Changed", key)
		}
	}
}

// TestExpectedStartOfAGroupWaitingForQuota: the queue's quota of 2 GPUs is held by the
// two one-GPU groups running for an hour, though half the cluster is free: the groups
// queued behind it wait for quota, and are expected to start when the quota comes back,
// two at once in an hour and the third when one of those ends.
func TestExpectedStartOfAGroupWaitingForQuota(t *testing.T) {
	e, now := halfBusyFor1h()
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default", Quota: cluster.Resources{gt.GPU: 2}}})
	keys := []string{declaring(e, "q1", 1, 30*time.Minute), declaring(e, "q2", 1, 30*time.Minute), declaring(e, "q3", 1, 30*time.Minute)}
	for range 2 {
		now = now.Add(sim.SimForecastEvery)
		e.Step(now)
	}
	for i, want := range []time.Duration{time.Hour, time.Hour, 90 * time.Minute} {
		st, _ := e.Group(keys[i])
		if st.Phase != lifecycle.Queued || st.WaitingKind != string(queue.QuotaExceeded) || !st.ExpectedStart.Equal(sim.Epoch.Add(want)) {
			t.Errorf("%s: %s (%s), expected start %v (%q), want queued for quota, starting at %s",
				keys[i], st.Phase, st.WaitingKind, st.ExpectedStart, st.ExpectedStartUnknown, want)
		}
	}
}

// TestReservationWhereCapacityFreesFirst: three 2-GPU nodes. n-0 has a GPU free, and
// its other held for 10 hours; n-1 and n-2 are full until an hour from now. A starving
// gang of two 2-GPU members is reserved n-1 and n-2, where the forecast plans it (in an
// hour), not the nodes with the most free now (n-0 and n-1, in 10 hours).
func TestReservationWhereCapacityFreesFirst(t *testing.T) {
	e := sim.NewEngineWith(0)
	for i := range 3 {
		e.SetNode(gt.Node(fmt.Sprintf("n-%d", i)).GPU(2).Obj())
	}
	now := sim.Epoch
	run := func(name, node string, members int, d time.Duration) {
		key := "Coscheduling/default/" + name
		e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: members})
		for i := range members {
			p := runningPod(fmt.Sprintf("%s-%d", name, i), node)
			p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: d.String()}
			e.SetPod(p, key)
		}
		e.Step(now)
	}
	run("long", "n-0", 1, 10*time.Hour)
	run("b1", "n-1", 2, time.Hour)
	run("b2", "n-2", 2, time.Hour)
	gang := "Coscheduling/default/gang"
	e.SetGroup(engine.GroupSpec{Key: gang, Source: engine.Coscheduling, Namespace: "default", Name: "gang", MinMember: 2})
	for i := range 2 {
		e.SetPod(gt.Pod(fmt.Sprintf("gang-%d", i)).GPU(2).Obj(), gang)
	}
	for _, d := range []time.Duration{time.Second, time.Minute + time.Second} {
		now = sim.Epoch.Add(d)
		e.Step(now)
	}
	// A pass after the forecast that planned the gang.
	waitingGroup(e, "other", 0, false)
	e.Step(now)
	holder, start := e.ExpectedStart()
	if holder != gang || !start.Equal(sim.Epoch.Add(time.Hour)) {
		t.Errorf("reservation held by %q, expected to start at %v; want %s, at %v (on n-1 and n-2)", holder, start, gang, sim.Epoch.Add(time.Hour))
	}
}

// TestForecastCountsThePreemptor: one GPU, held by a group that vip, of higher priority,
// preempts. While the victim's pod terminates (its grace period is 10 minutes), a group
// queued behind vip is not told it starts when the victim's GPU is released: the
// forecast plans vip first, on that GPU, and since vip declares no run time, the later
// group's start is unknown.
func TestForecastCountsThePreemptor(t *testing.T) {
	e := oneGPUEngine(1)
	victim := runningPod("victim-0", "n-0")
	grace := int64(600)
	victim.Spec.TerminationGracePeriodSeconds = &grace
	e.SetGroup(engine.GroupSpec{Key: "Coscheduling/default/victim", Source: engine.Coscheduling, Namespace: "default", Name: "victim", MinMember: 1})
	e.SetPod(victim, "Coscheduling/default/victim")
	e.Step(sim.Epoch)
	now := sim.Epoch.Add(time.Minute)
	vip := waitingGroup(e, "vip", 10, false)
	if out := e.Step(now); len(out.Evictions) != 1 {
		t.Fatalf("evictions %+v, want the victim's", out.Evictions)
	}
	later := declaring(e, "later", 1, 10*time.Minute)
	now = now.Add(sim.SimForecastEvery + time.Second)
	e.Step(now)
	if st, _ := e.Group(vip); len(st.Preempting) != 1 {
		t.Fatalf("vip: want it still waiting for its victim, found %+v", st)
	}
	st, _ := e.Group(later)
	if !st.ExpectedStart.IsZero() || st.ExpectedStartUnknown == "" {
		t.Errorf("later: expected start %v (%q), want unknown, since vip takes the GPU its victim releases", st.ExpectedStart, st.ExpectedStartUnknown)
	}
}

// TestExpectedStartOnTheNodesAGroupMayUse: two 2-GPU nodes of pool a100, full for an
// hour, and one of pool h100, free but tainted. A group whose node selector picks the
// a100 pool, and one that does not tolerate the taint, are expected to start in an hour,
// when the a100 nodes free up, not now on the h100 node they may not use; after the
// taint is gone the second is admitted there at once.
func TestExpectedStartOnTheNodesAGroupMayUse(t *testing.T) {
	e := sim.NewEngineWith(0)
	for i := range 2 {
		e.SetNode(gt.Node(fmt.Sprintf("a100-%d", i)).GPU(2).Label("pool", "a100").Obj())
	}
	h100 := gt.Node("h100-0").GPU(2).Label("pool", "h100")
	e.SetNode(h100.Taint("dedicated", "h100", corev1.TaintEffectNoSchedule).Obj())
	now := sim.Epoch
	for i := range 4 {
		key := declaring(e, fmt.Sprintf("run%d", i), 1, time.Hour)
		out := e.Step(now)
		if len(out.Binds()) != 1 {
			t.Fatalf("run%d: binds %+v, want one", i, out.Binds())
		}
		p := runningPod(fmt.Sprintf("run%d-0", i), out.Binds()[0].Node)
		p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "1h"}
		e.SetPod(p, key)
		e.Step(now)
	}
	pooled := "Coscheduling/default/pooled"
	e.SetGroup(engine.GroupSpec{Key: pooled, Source: engine.Coscheduling, Namespace: "default", Name: "pooled", MinMember: 2})
	for i := range 2 {
		p := gt.Pod(fmt.Sprintf("pooled-%d", i)).GPU(1).Selector("pool", "a100").Obj()
		p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "30m"}
		e.SetPod(p, pooled)
	}
	untolerating := declaring(e, "untolerating", 1, 30*time.Minute)
	now = now.Add(sim.SimForecastEvery)
	e.Step(now)
	for _, key := range []string{pooled, untolerating} {
		st, _ := e.Group(key)
		if want := sim.Epoch.Add(time.Hour); st.Phase != lifecycle.Queued || !st.ExpectedStart.Equal(want) {
			t.Errorf("%s: %s, expected start %v (%q), want queued, starting at %v", key, st.Phase, st.ExpectedStart, st.ExpectedStartUnknown, want)
		}
	}
	e.SetNode(gt.Node("h100-0").GPU(2).Label("pool", "h100").Obj())
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Binds()) != 1 || out.Binds()[0].Group != untolerating || out.Binds()[0].Node != "h100-0" {
		t.Errorf("binds %+v once the taint is gone, want untolerating's on h100-0", out.Binds())
	}
}

// TestExpectedStartOfMembersKeptApart: two 2-GPU nodes, n-0 idle and n-1 full for an
// hour. A group of two one-GPU members that a rule keeps one per node waits (n-0 alone
// has room for both), and is expected to start in an hour, when n-1 frees up, not now
// on n-0. The rule is pod anti-affinity or a topology spread of at most one per node,
// over the hostname and selecting the job's pods, carried by two workers or by a
// master and a worker, which differ in labels and are shapes of their own.
func TestExpectedStartOfMembersKeptApart(t *testing.T) {
	antiAffinity := func(b *gt.PodBuilder) *gt.PodBuilder { return b.AntiAffinity("job", "apart", corev1.LabelHostname) }
	spread := func(b *gt.PodBuilder) *gt.PodBuilder { return b.Spread(1, corev1.LabelHostname, "job", "apart") }
	for _, tc := range []struct {
		name     string
		rule     func(*gt.PodBuilder) *gt.PodBuilder
		replicas []string
	}{
		{"anti-affinity", antiAffinity, []string{"worker", "worker"}},
		{"anti-affinity of a master and a worker", antiAffinity, []string{"master", "worker"}},
		{"spread", spread, []string{"worker", "worker"}},
		{"spread of a master and a worker", spread, []string{"master", "worker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngineWith(0)
			for i := range 2 {
				e.SetNode(gt.Node(fmt.Sprintf("n-%d", i)).GPU(2).Obj())
			}
			now := sim.Epoch
			runTwoGPUsForAnHour(e, "n-1", now)
			apart := "Coscheduling/default/apart"
			e.SetGroup(engine.GroupSpec{Key: apart, Source: engine.Coscheduling, Namespace: "default", Name: "apart", MinMember: 2})
			for i, replica := range tc.replicas {
				p := tc.rule(gt.Pod(fmt.Sprintf("apart-%d", i)).GPU(1).Label("job", "apart").Label("replica", replica)).Obj()
				p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "30m"}
				e.SetPod(p, apart)
			}
			expectQueuedForAnHour(t, e, apart, now, "the members may not share n-0")
		})
	}
}

// expectQueuedForAnHour steps e a forecast after now and fails unless group key is still
// queued (why says why it must be) and expected to start when runTwoGPUsForAnHour's
// group ends.
func expectQueuedForAnHour(t *testing.T, e *engine.Engine, key string, now time.Time, why string) {
	t.Helper()
	if out := e.Step(now.Add(sim.SimForecastEvery)); len(out.Binds()) != 0 {
		t.Fatalf("binds %+v, want none: %s", out.Binds(), why)
	}
	st, _ := e.Group(key)
	if want := sim.Epoch.Add(time.Hour); st.Phase != lifecycle.Queued || !st.ExpectedStart.Equal(want) {
		t.Errorf("%s: %s, expected start %v (%q), want queued, starting at %v", key, st.Phase, st.ExpectedStart, st.ExpectedStartUnknown, want)
	}
}

// runTwoGPUsForAnHour adds group run, of one member Running on node with two GPUs, that
// declares an hour, and steps e at now.
func runTwoGPUsForAnHour(e *engine.Engine, node string, now time.Time) {
	runFor(e, "run", gt.Pod("run-0").GPU(2).Node(node).Obj(), "1h")
	e.Step(now)
}
