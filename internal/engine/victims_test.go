package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/sim"
)

// runningGang adds a group of priority prio with one Ready one-GPU member on each of
// nodes, and steps the engine at now.
func runningGang(e *engine.Engine, name string, prio int32, now time.Time, nodes ...string) string {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name,
		MinMember: len(nodes), Priority: prio})
	for i, n := range nodes {
		e.SetPod(runningPod(fmt.Sprintf("%s-%d", name, i), n), key)
	}
	e.Step(now)
	return key
}

func evictedGroups(out engine.Output) []string {
	var got []string
	for _, ev := range out.Evictions {
		if !slices.Contains(got, ev.Group) {
			got = append(got, ev.Group)
		}
	}
	slices.Sort(got)
	return got
}

// TestPreemptionTakesTheFewestGroups is the case tried as a user would: 4 nodes × 2
// GPUs in two racks (n-0, n-3 and n-1, n-2); three low-priority gangs of 2 × 1 GPU: a,
// the oldest, alone on n-0, b and c across n-1 and n-2. A high-priority gang of 4 × 1
// GPU that must stay in one rack needs n-0's two GPUs and n-3's. Evicting a alone makes
// room; the greedy search that spares the oldest first evicted b and c.
func TestPreemptionTakesTheFewestGroups(t *testing.T) {
	e := sim.NewEngine()
	for i, rack := range []string{"x", "y", "y", "x"} {
		e.SetNode(gt.Node(fmt.Sprintf("n-%d", i)).GPU(2).Label("rack", rack).Obj())
	}
	now := sim.Epoch
	a := runningGang(e, "a", 0, now, "n-0", "n-0")
	now = now.Add(time.Minute)
	runningGang(e, "b", 0, now, "n-1", "n-2")
	now = now.Add(time.Minute)
	runningGang(e, "c", 0, now, "n-1", "n-2")

	high := "Coscheduling/default/high"
	e.SetGroup(engine.GroupSpec{Key: high, Source: engine.Coscheduling, Namespace: "default", Name: "high",
		MinMember: 4, Priority: 100, Topology: placement.Topology{Required: "rack"}})
	for i := range 4 {
		e.SetPod(gt.Pod(fmt.Sprintf("high-%d", i)).GPU(1).Obj(), high)
	}
	now = now.Add(time.Minute)
	out := e.Step(now)
	if got := evictedGroups(out); !slices.Equal(got, []string{a}) {
		t.Fatalf("evicted %v, want %v alone", got, []string{a})
	}
	for i := range 2 {
		e.RemovePod(fmt.Sprintf("default/a-%d", i))
	}
	now = now.Add(time.Second)
	out = e.Step(now)
	var nodes []string
	for _, b := range out.Binds() {
		nodes = append(nodes, b.Node)
	}
	slices.Sort(nodes)
	if want := []string{"n-0", "n-0", "n-3", "n-3"}; !slices.Equal(nodes, want) {
		t.Fatalf("high bound to %v, want %v", nodes, want)
	}
	st, _ := e.Group(a)
	if st.Phase == lifecycle.Backoff || st.Failures != 0 {
		t.Errorf("a: expected it requeued at once without a failure, found %s with %d failures", st.Phase, st.Failures)
	}
}

// TestPreemptionFreesTheLeastBeyondTheNeed: two single-GPU gangs or one 2-GPU gang on a
// full node of 2 GPUs; a high-priority one-GPU group evicts one of the one-GPU gangs,
// the youngest, not the 2-GPU gang: of the sets of one group, it frees the least.
func TestPreemptionFreesTheLeastBeyondTheNeed(t *testing.T) {
	e := sim.NewEngine()
	for i := range 2 {
		e.SetNode(gt.Node(fmt.Sprintf("n-%d", i)).GPU(2).Obj())
	}
	now := sim.Epoch
	runningGang(e, "big", 0, now, "n-0", "n-0")
	now = now.Add(time.Minute)
	runningGang(e, "old", 0, now, "n-1")
	now = now.Add(time.Minute)
	young := runningGang(e, "young", 0, now, "n-1")
	vip := waitingGroup(e, "vip", 10, false)
	out := e.Step(now.Add(time.Minute))
	if got := evictedGroups(out); !slices.Equal(got, []string{young}) {
		t.Fatalf("evicted %v, want %v", got, []string{young})
	}
	_ = vip
}

// TestPreemptionSparesHigherPriority: of two one-GPU victims that free as much, the one
// of lower priority goes, although it was admitted first.
func TestPreemptionSparesHigherPriority(t *testing.T) {
	e := oneGPUEngine(2)
	now := sim.Epoch
	low := runningGang(e, "low", 0, now, "n-0")
	now = now.Add(time.Minute)
	runningGang(e, "mid", 5, now, "n-1")
	waitingGroup(e, "vip", 10, false)
	out := e.Step(now.Add(time.Minute))
	if got := evictedGroups(out); !slices.Equal(got, []string{low}) {
		t.Fatalf("evicted %v, want %v", got, []string{low})
	}
}

var _ = corev1.ResourceCPU
