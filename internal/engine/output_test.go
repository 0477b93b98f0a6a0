package engine_test

import (
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
