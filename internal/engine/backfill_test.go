package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
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

// TestBackfillWithExpectedRuntimes: two 2-GPU nodes, each with a one-GPU group running
// that declares an hour. A gang of 4 GPUs reserves both nodes (threshold 0) and is told
// it starts when they end; a group that declares 30 minutes backfills a free GPU; one
// that declares 2 hours, and one that declares nothing, wait.
func TestBackfillWithExpectedRuntimes(t *testing.T) {
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
	gang := declaring(e, "gang", 4, time.Hour)
	now = now.Add(time.Minute)
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
// group queued since the last forecast says so until the next, a minute later.
func TestEveryQueuedGroupHasAnExpectedStart(t *testing.T) {
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
	gang := declaring(e, "gang", 4, time.Hour)
	now = now.Add(time.Minute)
	e.Step(now)
	long := declaring(e, "long", 1, 2*time.Hour)
	unknown := declaring(e, "unknown", 1, 0)
	now = now.Add(time.Second)
	out := e.Step(now)
	st, _ := e.Group(long)
	if !st.ExpectedStart.IsZero() || st.ExpectedStartUnknown != "not forecast yet: muster forecasts the queue at most once a minute" {
		t.Errorf("long, queued since the last forecast: expected start %v (%q), want none yet", st.ExpectedStart, st.ExpectedStartUnknown)
	}
	now = now.Add(time.Minute)
	out = e.Step(now)
	for key, want := range map[string]time.Duration{gang: time.Hour, long: 2 * time.Hour, unknown: 2 * time.Hour} {
		st, _ := e.Group(key)
		if st.Phase != lifecycle.Queued || !st.ExpectedStart.Equal(sim.Epoch.Add(want)) {
			t.Errorf("%s: %s, expected start %v (%q), want queued, starting at %s", key, st.Phase, st.ExpectedStart, st.ExpectedStartUnknown, want)
		}
		if key != gang && !out.Changed[key] {
			t.Errorf("%s: its expected start became known but it is not in Changed", key)
		}
	}
}
