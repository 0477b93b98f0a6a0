package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// recorder keeps every Output the world's scheduler returned.
type recorder struct {
	*engine.Engine
	outs []engine.Output
}

func (r *recorder) Step(now time.Time) engine.Output {
	out := r.Engine.Step(now)
	r.outs = append(r.outs, out)
	return out
}

// TestOutputMeasurements: the measurements the metrics are built from, on the two-jobs
// example: decisions, queue wait, time to ready and resource-seconds held before ready.
func TestOutputMeasurements(t *testing.T) {
	rec := &recorder{Engine: sim.NewEngine()}
	w := sim.New(rec)
	for _, n := range gt.Nodes("n", 8, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1) }) {
		w.AddNode(n)
	}
	w.Submit(&sim.Job{Name: "a", Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second})
	w.Submit(&sim.Job{Name: "b", Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second})
	w.RunFor(25 * time.Minute)

	decisions := map[string]int{}
	var admitted []engine.Admission
	var ready []engine.Readiness
	held := map[corev1.ResourceName]float64{}
	for _, o := range rec.outs {
		for k, v := range o.Decisions {
			decisions[k] += v
		}
		admitted = append(admitted, o.Admitted...)
		ready = append(ready, o.Ready...)
		for k, v := range o.HeldBeforeReady {
			held[k] += v
		}
	}
	// b is refused at the start and once more when it crosses the 10m starvation threshold
	// (the pass that reserves capacity for it); nothing else re-decides it until a's GPUs
	// are released at 10m30s.
	if d := cmp.Diff(map[string]int{"admitted": 2, "unschedulable": 2}, decisions); d != "" {
		t.Errorf("decisions (-want +got):\n%s", d)
	}
	wantAdmitted := []engine.Admission{
		{Group: "Coscheduling/default/a", Queue: "default", Waited: 0},
		{Group: "Coscheduling/default/b", Queue: "default", Waited: 10*time.Minute + 30*time.Second},
	}
	if d := cmp.Diff(wantAdmitted, admitted); d != "" {
		t.Errorf("admissions (-want +got):\n%s", d)
	}
	wantReady := []engine.Readiness{{Group: "Coscheduling/default/a", After: 30 * time.Second}, {Group: "Coscheduling/default/b", After: 30 * time.Second}}
	if d := cmp.Diff(wantReady, ready); d != "" {
		t.Errorf("ready (-want +got):\n%s", d)
	}
	// Each job held 8 GPUs for the 30 s between bind and Ready; b held nothing while queued.
	if got := held[gt.GPU]; got != 2*8*30 {
		t.Errorf("GPU-seconds held before ready = %v, want %d", got, 2*8*30)
	}
}

// changeChecker fails the test when a Step changes the Status of a group it does not
// list in Output.Changed, apart from a waiting group's diagnosis text.
type changeChecker struct {
	*engine.Engine
	t       *testing.T
	checked int
}

func (c *changeChecker) Step(now time.Time) engine.Output {
	before := map[string]engine.Status{}
	for _, key := range c.Groups() {
		before[key], _ = c.Group(key)
	}
	out := c.Engine.Step(now)
	if once := slices.Compact(slices.Sorted(slices.Values(out.Changed))); len(once) != len(out.Changed) {
		c.t.Errorf("%s: Changed lists a group more than once: %v", now.Sub(sim.Epoch), out.Changed)
	}
	for key, was := range before {
		if slices.Contains(out.Changed, key) {
			continue
		}
		c.checked++
		is, ok := c.Group(key)
		if !ok {
			c.t.Errorf("%s: %s was forgotten but is not in Changed", now.Sub(sim.Epoch), key)
			continue
		}
		// The reason is re-decided on every pass and reported when its kind changes.
		was.Waiting, is.Waiting, was.Wait, is.Wait = "", "", nil, nil
		if d := cmp.Diff(was, is); d != "" {
			c.t.Errorf("%s: the status of %s changed but it is not in Changed (-before +after):\n%s", now.Sub(sim.Epoch), key, d)
		}
	}
	return out
}

// TestChangedListsEveryStatusChange: over a run with queueing, a worker that never
// gets Ready (evictions, backoff, failure), and jobs finishing, every group whose
// Status a Step changed is in that Step's Changed, so callers may read only those.
func TestChangedListsEveryStatusChange(t *testing.T) {
	c := &changeChecker{Engine: sim.NewEngine(), t: t}
	w := sim.New(c)
	for _, n := range gt.Nodes("n", 8, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1) }) {
		w.AddNode(n)
	}
	fast := engine.PolicyOverrides{StartTimeout: new(2 * time.Minute), MaxRetries: new(1)}
	w.Submit(&sim.Job{Name: "a", Workers: 4, GPU: 1, RunFor: 5 * time.Minute, ReadyAfter: 30 * time.Second})
	w.Submit(&sim.Job{Name: "broken", Workers: 4, GPU: 1, RunFor: 5 * time.Minute, ReadyAfter: 30 * time.Second, FailInit: []int{2}, Policy: fast})
	w.Submit(&sim.Job{Name: "b", Workers: 6, GPU: 1, RunFor: 5 * time.Minute, ReadyAfter: 30 * time.Second})
	w.Submit(&sim.Job{Name: "c", Workers: 2, GPU: 1, RunFor: time.Minute, ReadyAfter: 10 * time.Second})
	w.RunFor(40 * time.Minute)
	if c.checked == 0 {
		t.Fatal("no Step left a group out of Changed: the check checked nothing")
	}
}
