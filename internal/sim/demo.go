package sim

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
)

// TwoJobs replays the guide's example on a world driven by sched: eight one-GPU nodes, two
// jobs of eight one-GPU workers whose pods arrive interleaved, each needing ten minutes of
// training once all eight workers are Ready. It runs for horizon of simulated time.
func TwoJobs(sched Scheduler, horizon time.Duration) *World {
	w := New(sched)
	for i := 0; i < 8; i++ {
		w.AddNode(gpuNode(fmt.Sprintf("gpu-%d", i), 1))
	}
	job := func(name string) *Job {
		return &Job{Name: name, Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second}
	}
	w.SubmitInterleaved(job("a"), job("b"))
	w.RunFor(horizon)
	return w
}

// NewEngine returns muster's engine with one unlimited default queue and default policy,
// as the demo and the simulator use it.
func NewEngine() *engine.Engine { return NewEngineWith(10 * time.Minute) }

// SimForecastEvery is how often the simulated engine forecasts every queued group's
// start: five minutes, not muster serve's 10 s, since a replay steps through a month of
// arrivals (a job's first prediction is then up to five minutes late).
const SimForecastEvery = 5 * time.Minute

// SimReservationEvery is how often the simulated engine plans the starving group's
// nodes between two forecasts: where its reservation goes decides how long it and the
// groups behind it wait.
const SimReservationEvery = time.Minute

// NewEngineWith is NewEngine with the given starvation threshold.
func NewEngineWith(starve time.Duration) *engine.Engine {
	return NewEngineOrdered(starve, engine.SizeOrder{})
}

// NewEngineOrdered is NewEngineWith with the queue ordered by size (engine.SizeOrder).
func NewEngineOrdered(starve time.Duration, order engine.SizeOrder) *engine.Engine {
	e := engine.New(engine.Config{DefaultQueue: "default", Policy: lifecycle.DefaultPolicy(), StarvationThreshold: starve,
		SizeOrder: order, ForecastEvery: SimForecastEvery, ReservationEvery: SimReservationEvery})
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default"}})
	return e
}

// Report writes a world's timeline and per-job measurements.
func Report(out io.Writer, title string, w *World) {
	fmt.Fprintf(out, "== %s\n", title)
	for _, line := range w.Timeline {
		fmt.Fprintln(out, "  "+line)
	}
	fmt.Fprintf(out, "  %-4s %-18s %-14s %-10s %-26s %s\n", "job", "all workers ready", "finished", "evictions",
		"GPU·s held before ready", "GPU·s held while incomplete")
	var held float64
	for _, j := range w.Jobs() {
		fmt.Fprintf(out, "  %-4s %-18s %-14s %-10d %-26.0f %.0f\n", j.Name, since(j.Ready, j.Submitted),
			since(j.Finished, j.Submitted), j.Evictions, j.HeldBeforeReady, j.HeldIncomplete)
		held += j.HeldIncomplete
	}
	fmt.Fprintln(out, "  cleanup after failure: no job failed in this example (see `go test ./internal/engine -run TestScenarios`)")
	fmt.Fprintf(out, "  total GPU-seconds held by incomplete groups over %s: %.0f\n\n", fmtDur(w.Elapsed()), held)
}

func since(t, from time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "after " + fmtDur(t.Sub(from))
}

// HeldIncomplete sums the GPU-seconds every job held while incomplete.
func (w *World) HeldIncomplete() float64 {
	var total float64
	for _, j := range w.jobs {
		total += j.HeldIncomplete
	}
	return total
}

// Summary is one line per job: who finished, for tests and the demo's verdict.
func (w *World) Summary() string {
	var parts []string
	for _, j := range w.Jobs() {
		state := "unfinished"
		if !j.Finished.IsZero() {
			state = "finished at " + fmtDur(j.Finished.Sub(Epoch))
		}
		parts = append(parts, j.Name+" "+state)
	}
	return strings.Join(parts, ", ")
}
