package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestHeldGPUSeconds checks the integral on a hand-made timeline: job a is bound
// whole one pod a second, job b gets two of its four pods and keeps them.
func TestHeldGPUSeconds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tl := timeline{
		job:   map[string]string{"a-0": "a", "a-1": "a", "a-2": "a", "a-3": "a", "b-0": "b", "b-1": "b"},
		bound: map[string]time.Time{"a-0": at(0), "a-1": at(1), "a-2": at(2), "a-3": at(3), "b-0": at(4), "b-1": at(6)},
		ready: map[string]time.Time{"a-0": at(5), "a-1": at(5), "a-2": at(5), "a-3": at(7)},
	}
	for _, c := range []struct {
		name                   string
		from, to               time.Time
		wantHeld, wantStranded float64
	}{
		// a: 1 GPU for 1 s, 2 for 1 s, 3 for 1 s = 6, whole at 3 s; b: 1 for 2 s, 2 for
		// 4 s = 10, never whole.
		{"[0s, 10s)", t0, at(10), 16, 10},
		// a holds 3 GPUs for 0.5 s and is whole at 3 s, b holds 1 for 1 s.
		{"[2.5s, 5s)", at(2.5), at(5), 2.5, 1},
		// a is not whole yet at 2.5 s: 1 + 2 + 3×0.5, all stranded.
		{"[0s, 2.5s)", t0, at(2.5), 4.5, 4.5},
	} {
		held, stranded := tl.heldGPUSeconds(c.from, c.to, 4, 1)
		if held != c.wantHeld || stranded != c.wantStranded {
			t.Errorf("heldGPUSeconds over %s: expected %v held, %v stranded, found %v, %v", c.name, c.wantHeld, c.wantStranded, held, stranded)
		}
	}
	if got, ok := tl.firstWhole(tl.bound, 4); !ok || !got.Equal(at(3)) {
		t.Errorf("firstWhole bound: expected 3s, found %v (%v)", got.Sub(t0), ok)
	}
	if got, ok := tl.firstWhole(tl.ready, 4); !ok || !got.Equal(at(7)) {
		t.Errorf("firstWhole Ready: expected 7s, found %v (%v)", got.Sub(t0), ok)
	}
	if _, ok := tl.firstWhole(tl.bound, 5); ok {
		t.Error("firstWhole with minMember 5: expected no whole job, found one")
	}
	// With b's size 2, b is whole at 6 s and holds 1 GPU for 2 s before; a's size
	// stays the caller's.
	tl.sizes = map[string]int{"b": 2}
	if held, stranded := tl.heldGPUSeconds(t0, at(10), 4, 1); held != 8 || stranded != 0 {
		t.Errorf("heldGPUSeconds with b of size 2: expected 8 held, 0 stranded, found %v, %v", held, stranded)
	}
	if got, ok := tl.firstWhole(tl.bound, 5); !ok || !got.Equal(at(6)) {
		t.Errorf("firstWhole with b of size 2: expected 6s, found %v (%v)", got.Sub(t0), ok)
	}
}

// TestPlan checks which runners each scenario gets.
func TestPlan(t *testing.T) {
	p, err := makePlan(Options{Scenarios: []string{ScenarioSeed, ScenarioThroughput, ScenarioCeiling}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.runners[ScenarioSeed], ","); got != "kube-scheduler-defaults,kube-scheduler-qps,kube-scheduler-gang,muster-defaults,muster-qps" {
		t.Errorf("seed runners: expected no ceiling, found %s", got)
	}
	if got := strings.Join(p.runners[ScenarioThroughput], ","); got != "kube-scheduler-defaults,kube-scheduler-qps,kube-scheduler-gang,muster-defaults,muster-qps,ceiling" {
		t.Errorf("throughput runners: expected all six, found %s", got)
	}
	for _, bad := range []Options{{Scenarios: []string{"nope"}}, {Scenarios: []string{ScenarioCeiling}}, {Runners: []string{"kube"}},
		{Scenarios: []string{ScenarioThroughput}, Runners: []string{RunnerCeiling}},
		{Scenarios: []string{ScenarioSeed}, Runners: []string{RunnerCeiling}}} {
		if _, err := makePlan(bad); err == nil {
			t.Errorf("makePlan(%+v): expected an error, found none", bad)
		}
	}
}

// TestSeed runs the seed scenario on the sandbox with a short window: the
// pod-by-pod scheduler splits the GPUs and holds them idle, the gang schedulers bind
// one job whole and hold nothing but the moments between the binds of that job.
func TestSeed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Options{
		Scenarios: []string{ScenarioSeed},
		Runners:   []string{RunnerKubeSchedulerQPS, RunnerKubeSchedulerGang, RunnerMusterDefaults},
		Window:    5 * time.Second, Progress: &progress, MusterBinary: sandboxtest.MusterBinary(t),
	})
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	byRunner := map[string]Result{}
	for _, r := range rep.Results {
		if r.Err != nil {
			t.Errorf("%s: expected a complete run, found %v", r.Runner, r.Err)
		}
		byRunner[r.Runner] = r
	}
	def := byRunner[RunnerKubeSchedulerQPS]
	if def.Bound != 8 || def.WholeBound {
		t.Errorf("kube-scheduler-qps: expected 8 pods bound and no whole job, found %d bound, whole %v", def.Bound, def.WholeBound)
	}
	// 8 GPUs bound to two half jobs for most of the 5 s window.
	if def.HeldGPUSeconds < 20 {
		t.Errorf("kube-scheduler-qps: expected at least 20 GPU-s held by incomplete groups, found %.2f", def.HeldGPUSeconds)
	}
	if def.StrandedGPUSeconds != def.HeldGPUSeconds {
		t.Errorf("kube-scheduler-qps: expected all %.2f GPU-s held by groups never whole, found %.2f", def.HeldGPUSeconds, def.StrandedGPUSeconds)
	}
	for _, name := range []string{RunnerKubeSchedulerGang, RunnerMusterDefaults} {
		r := byRunner[name]
		if r.Bound != 8 || !r.WholeBound || !r.WholeReady {
			t.Errorf("%s: expected one job bound whole and Ready, found %d bound, whole %v, Ready %v", name, r.Bound, r.WholeBound, r.WholeReady)
		}
		// Only the spread of the concurrent binds of one admitted job: 8 GPUs held
		// for a whole second would be 8 GPU-s.
		if r.HeldGPUSeconds >= 1 {
			t.Errorf("%s: expected under 1 GPU-s held by incomplete groups, found %.2f", name, r.HeldGPUSeconds)
		}
		// The second job gets no pod while the first holds every GPU.
		if r.StrandedGPUSeconds != 0 {
			t.Errorf("%s: expected no GPU-s held by groups never whole, found %.2f", name, r.StrandedGPUSeconds)
		}
	}
	// The API server counted every run's binds, before the window ended, and no write
	// served before the end more often than in the whole run.
	for _, r := range rep.Results {
		if got := r.TimedWrites["POST pods/binding"]; got < float64(r.Bound) {
			t.Errorf("%s: expected at least %d binds counted before the window's end, found %v (%s)", r.Runner, r.Bound, got, r.TimedWrites)
		}
		for k, v := range r.TimedWrites {
			if v > r.Writes[k] {
				t.Errorf("%s: expected at most %v %s in the whole run, found %v before the window's end", r.Runner, r.Writes[k], k, v)
			}
		}
	}
	var table bytes.Buffer
	if err := rep.WriteMarkdown(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "| seed | first job whole: all bound (s) |") {
		t.Errorf("markdown table: expected a seed row, found\n%s", table.String())
	}
}

// TestReportMedians checks the table of a report with three rounds: each figure is
// the median of the rounds that have it, ratios are of medians, and the notes list
// every round with the per-round ratios.
func TestReportMedians(t *testing.T) {
	run := func(runner string, round int, span time.Duration, bound int) Result {
		return Result{Scenario: ScenarioThroughput, Runner: runner, Round: round, Pods: 400, JobSize: 8, Bound: bound, Span: span}
	}
	rep := &Report{Rounds: 3, Results: []Result{
		run(RunnerMusterDefaults, 1, 2*time.Second, 400), run(RunnerCeiling, 1, 1*time.Second, 400),
		run(RunnerMusterDefaults, 2, 4*time.Second, 400), run(RunnerCeiling, 2, 2*time.Second, 400),
		run(RunnerMusterDefaults, 3, 1*time.Second, 300), run(RunnerCeiling, 3, 4*time.Second, 400),
	}}
	var row []string
	for _, r := range rep.Rows() {
		if r[1] == "pods/s (first create → last bind)" {
			row = r
		}
	}
	if row == nil {
		t.Fatalf("expected a pods/s row, found %v", rep.Rows())
	}
	// muster: 200 and 100 pods/s (round 3 did not bind all: no figure), median 150;
	// ceiling: 400, 200, 100, median 200.
	col := map[string]string{}
	for i, h := range rep.Rows()[0] {
		col[h] = row[i]
	}
	if got := col[RunnerMusterDefaults]; got != "150.0 (2 of 3 rounds)" {
		t.Errorf("muster pods/s: expected the median of the 2 complete rounds, found %q", got)
	}
	if got := col[RunnerCeiling]; got != "200.0" {
		t.Errorf("ceiling pods/s: expected 200.0, found %q", got)
	}
	if got := col[RunnerMusterDefaults+"/"+RunnerCeiling]; got != "0.75" {
		t.Errorf("muster/ceiling: expected 0.75, found %q", got)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "throughput, pods/s (first create → last bind): muster-defaults 200.0 / 100.0 / —; ceiling 400.0 / 200.0 / 100.0; muster-defaults/ceiling 0.50 / 0.50 / —"
	if !strings.Contains(text.String(), want) {
		t.Errorf("notes: expected the line\n%s\nfound\n%s", want, text.String())
	}
}
