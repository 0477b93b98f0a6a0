package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one runner did in one scenario.
type Result struct {
	// Scenario and Runner name the run, Round counts from 1 the scenario's rounds.
	Scenario, Runner string
	Round            int
	// Pods is the workload's pod count, JobSize the pods (and minMember) of each job.
	Pods, JobSize int
	// Bound is how many pods were seen bound by the end of the run.
	Bound int
	// ClaimsAllocated, in the DRA scenario, is how many of the run's ResourceClaims were
	// allocated and reserved at its end.
	ClaimsAllocated int
	// Window is the scenario's observation window, or 0 if it ran until all were bound.
	Window time.Duration
	// Span is from the first pod create to the last bind seen; 0 if none was bound.
	Span time.Duration
	// Created is from the first pod create until the last create returned: the pace
	// the API server allowed the workload's creator beside the scheduler.
	Created time.Duration
	// FirstWholeBound and FirstWholeReady are from the first create until the first job
	// had all its pods bound, and Ready; 0 with Whole* false if no job got there.
	FirstWholeBound, FirstWholeReady time.Duration
	WholeBound, WholeReady           bool
	// HeldGPUSeconds is the GPU time bound to jobs with fewer than JobSize pods bound,
	// over the window, or from the first create to the last bind.
	HeldGPUSeconds float64
	// StrandedGPUSeconds is the part of HeldGPUSeconds held by jobs that were still
	// not whole at its end: what partial jobs kept from the others, without the
	// moments between the binds of jobs that became whole.
	StrandedGPUSeconds float64
	// Writes are the write requests the API server served from the runner's start to
	// its stop (the window's end, or Options.Drain after the last bind), from every
	// client: the bench creating pods, the simulated kubelet, and the scheduler.
	Writes requestCounts
	// TimedWrites are the part of Writes served before the timed span ended (the last
	// bind, or the window's end): the writes that competed with the scheduling.
	TimedWrites requestCounts
	// HeapBefore and GoroutinesBefore are the process's live heap (after a
	// collection) and goroutines when the run started, with its sandbox up: a run
	// that starts on more than the ones before it of the same scenario is paying for
	// what an earlier run left behind.
	HeapBefore       uint64
	GoroutinesBefore int
	// Deep is the deep-queue scenario's figures, for its runs only.
	Deep *DeepFigures
	// Err says why the run did not complete, if it did not.
	Err error
}

// WritesPerPod is the API write requests of the run per bound pod, or 0 if none was
// bound.
func (r Result) WritesPerPod() float64 {
	if r.Bound == 0 {
		return 0
	}
	return r.Writes.total() / float64(r.Bound)
}

// PodsPerSecond is the bound pods over the span, or 0 if none was bound.
func (r Result) PodsPerSecond() float64 {
	if r.Span <= 0 {
		return 0
	}
	return float64(r.Bound) / r.Span.Seconds()
}

// measure fills the result's figures from the run's timeline; from is the first
// create. Every bench pod has one GPU.
func (r *Result) measure(sc Scenario, from time.Time, t timeline) {
	if sc.Deep != nil {
		_, t.sizes = sc.Deep.groupOrder()
		deep := t.deepFigures(t.sizes)
		r.Deep = &deep
	}
	r.Bound = len(t.bound)
	if last, ok := t.lastBind(); ok {
		r.Span = last.Sub(from)
	}
	if at, ok := t.firstWhole(t.bound, sc.JobSize); ok {
		r.FirstWholeBound, r.WholeBound = at.Sub(from), true
	}
	if at, ok := t.firstWhole(t.ready, sc.JobSize); ok {
		r.FirstWholeReady, r.WholeReady = at.Sub(from), true
	}
	to := from.Add(sc.Window)
	if sc.Window == 0 {
		to = from.Add(r.Span)
	}
	r.HeldGPUSeconds, r.StrandedGPUSeconds = t.heldGPUSeconds(from, to, sc.JobSize, 1)
}

// summary is a one-line account of the result, for progress output.
func (r Result) summary() string {
	s := fmt.Sprintf("%s/%s round %d: %d pods created in %.2fs, %d bound in %.2fs (%.1f pods/s), first job whole %s (Ready %s), %.2f GPU-s held by incomplete groups (%.2f by groups never whole)",
		r.Scenario, r.Runner, r.Round, r.Pods, r.Created.Seconds(), r.Bound, r.Span.Seconds(), r.PodsPerSecond(),
		seconds(r.FirstWholeBound, r.WholeBound), seconds(r.FirstWholeReady, r.WholeReady), r.HeldGPUSeconds, r.StrandedGPUSeconds)
	s += fmt.Sprintf(" [process at start: %d MiB heap, %d goroutines]", r.HeapBefore>>20, r.GoroutinesBefore)
	if d := r.Deep; d != nil {
		s += fmt.Sprintf("; deep queue: %d of %d groups admitted, %.2f admissions/s over %.2fs from the first release, release → next admission p50 %.3fs p99 %.3fs over %d of %d releases, release → node full again p50 %.3fs p99 %.3fs over %d nodes",
			d.Admitted, d.Groups, d.AdmissionsPerSecond, d.Drain.Seconds(), d.ReleaseP50.Seconds(), d.ReleaseP99.Seconds(), d.Used, d.Releases,
			d.FillP50.Seconds(), d.FillP99.Seconds(), d.Filled)
	}
	if r.Err != nil {
		s += "; incomplete: " + r.Err.Error()
	}
	return s
}

// Report is the results of a bench run.
type Report struct {
	// QPS and Burst are every scheduler's client settings.
	QPS   float32
	Burst int
	// Rounds is how many times each scenario ran its runners.
	Rounds int
	// Results are in the order the runs ran.
	Results []Result
	// Soak is the soak's figures, if it ran.
	Soak *SoakResult
}

// metric is one row of the table: a figure of a scenario.
type metric struct {
	scenario, name string
	value          func(Result) (float64, bool)
	format         string
}

// metrics are the table's rows, in order.
var metrics = []metric{
	{ScenarioSeed, "first job whole: all bound (s)", func(r Result) (float64, bool) {
		return r.FirstWholeBound.Seconds(), r.WholeBound
	}, "%.2f"},
	{ScenarioSeed, "first job whole: all Ready (s)", func(r Result) (float64, bool) {
		return r.FirstWholeReady.Seconds(), r.WholeReady
	}, "%.2f"},
	{ScenarioSeed, "GPU-s held by incomplete groups", heldGPUSeconds, "%.2f"},
	{ScenarioSeed, "  of which by groups never whole in the window", strandedGPUSeconds, "%.2f"},
	{ScenarioThroughput, "pods/s (first create → last bind)", podsPerSecond, "%.1f"},
	{ScenarioThroughput, "time to last bind (s)", timeToLastBind, "%.2f"},
	{ScenarioThroughput, "GPU-s held by incomplete groups", heldGPUSeconds, "%.2f"},
	{ScenarioThroughput, "API writes per bound pod (all clients)", writesPerPod, "%.2f"},
	{ScenarioBigGang, "time to last bind (s)", timeToLastBind, "%.2f"},
	{ScenarioBigGang, "pods/s (first create → last bind)", podsPerSecond, "%.1f"},
	{ScenarioBigGang, "API writes per bound pod (all clients)", writesPerPod, "%.2f"},
	{ScenarioAntiAffinity, "pods/s (first create → last bind)", podsPerSecond, "%.1f"},
	{ScenarioAntiAffinity, "time to last bind (s)", timeToLastBind, "%.2f"},
	{ScenarioAntiAffinity, "GPU-s held by incomplete groups", heldGPUSeconds, "%.2f"},
	{ScenarioDRA, "pods/s (first create → last bind)", podsPerSecond, "%.1f"},
	{ScenarioDRA, "time to last bind (s)", timeToLastBind, "%.2f"},
	{ScenarioDRA, "claims allocated and reserved at the end", func(r Result) (float64, bool) {
		return float64(r.ClaimsAllocated), r.ClaimsAllocated > 0
	}, "%.0f"},
	{ScenarioDeepQueue, "admissions/s (first release → last admission)", func(r Result) (float64, bool) {
		return deepValue(r, func(d DeepFigures) float64 { return d.AdmissionsPerSecond })
	}, "%.2f"},
	{ScenarioDeepQueue, "groups admitted", func(r Result) (float64, bool) {
		return deepValue(r, func(d DeepFigures) float64 { return float64(d.Admitted) })
	}, "%.0f"},
	{ScenarioDeepQueue, "release → next admission on the node, p50 (s)", func(r Result) (float64, bool) {
		return deepValue(r, func(d DeepFigures) float64 { return d.ReleaseP50.Seconds() })
	}, "%.3f"},
	{ScenarioDeepQueue, "release → next admission on the node, p99 (s)", func(r Result) (float64, bool) {
		return deepValue(r, func(d DeepFigures) float64 { return d.ReleaseP99.Seconds() })
	}, "%.3f"},
	{ScenarioDeepQueue, "release → node's 8 GPUs bound again, p50 (s)", func(r Result) (float64, bool) {
		return fillValue(r, func(d DeepFigures) float64 { return d.FillP50.Seconds() })
	}, "%.3f"},
	{ScenarioDeepQueue, "release → node's 8 GPUs bound again, p99 (s)", func(r Result) (float64, bool) {
		return fillValue(r, func(d DeepFigures) float64 { return d.FillP99.Seconds() })
	}, "%.3f"},
}

// fillValue is a deep-queue refill figure of r, if any released node was filled.
func fillValue(r Result, f func(DeepFigures) float64) (float64, bool) {
	if r.Deep == nil || r.Deep.Filled == 0 {
		return 0, false
	}
	return f(*r.Deep), true
}

// deepValue is a deep-queue figure of r, if r has one: a run that admitted nothing
// has none.
func deepValue(r Result, f func(DeepFigures) float64) (float64, bool) {
	if r.Deep == nil || r.Deep.Used == 0 {
		return 0, false
	}
	return f(*r.Deep), true
}

func heldGPUSeconds(r Result) (float64, bool) { return r.HeldGPUSeconds, true }

func strandedGPUSeconds(r Result) (float64, bool) { return r.StrandedGPUSeconds, true }

func podsPerSecond(r Result) (float64, bool) { return r.PodsPerSecond(), r.Bound == r.Pods }

func writesPerPod(r Result) (float64, bool) { return r.WritesPerPod(), r.Bound > 0 && r.Writes != nil }

func timeToLastBind(r Result) (float64, bool) { return r.Span.Seconds(), r.Bound == r.Pods }

// ratios are the ratio columns: one runner's figure over another's.
var ratios = [][2]string{
	{RunnerMusterDefaults, RunnerKubeSchedulerDefaults},
	{RunnerMusterQPS, RunnerKubeSchedulerQPS},
	{RunnerMusterQPS, RunnerKubeSchedulerGang},
	{RunnerMusterDefaults, RunnerCeiling},
}

// Rows returns the table: a header row, then one row per figure of a scenario that
// ran, with a column per runner and per ratio. A runner's figure is its median over
// the rounds in which it got there; a ratio is of medians. A missing figure (the
// runner did not run, or never got there) is "—"; "never" marks a job that was never
// whole.
func (rep *Report) Rows() [][]string {
	header := []string{"scenario", "figure"}
	header = append(header, Runners()...)
	for _, r := range ratios {
		header = append(header, r[0]+"/"+r[1])
	}
	rows := [][]string{header}
	for _, m := range metrics {
		byRunner := rep.byRunner(m.scenario)
		if len(byRunner) == 0 {
			continue
		}
		row := []string{m.scenario, m.title(byRunner)}
		for _, runner := range Runners() {
			row = append(row, m.cell(byRunner[runner]))
		}
		for _, r := range ratios {
			row = append(row, m.ratio(byRunner[r[0]], byRunner[r[1]]))
		}
		rows = append(rows, row)
	}
	return rows
}

// byRunner returns the results of a scenario by runner, in round order.
func (rep *Report) byRunner(scenario string) map[string][]Result {
	out := map[string][]Result{}
	for _, r := range rep.Results {
		if r.Scenario == scenario {
			out[r.Runner] = append(out[r.Runner], r)
		}
	}
	return out
}

// title is the figure's name, with the seed window filled in.
func (m metric) title(byRunner map[string][]Result) string {
	if m.scenario != ScenarioSeed {
		return m.name
	}
	for _, rs := range byRunner {
		return strings.Replace(m.name, "held by incomplete groups", fmt.Sprintf("held by incomplete groups over %s", rs[0].Window), 1)
	}
	return m.name
}

// median returns the median of the figure over the results that have it, and how
// many do.
func (m metric) median(rs []Result) (float64, int) {
	var vs []float64
	for _, r := range rs {
		if v, ok := m.value(r); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, 0
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, n
	}
	return vs[len(vs)/2], len(vs)
}

// cell formats one runner's figure: the median, and how many rounds had it if not all.
func (m metric) cell(rs []Result) string {
	if len(rs) == 0 {
		return "—"
	}
	v, n := m.median(rs)
	switch {
	case n == len(rs):
		return fmt.Sprintf(m.format, v)
	case n > 0:
		return fmt.Sprintf(m.format+" (%d of %d rounds)", v, n, len(rs))
	}
	r := rs[0]
	if r.Bound < r.Pods && r.Window == 0 {
		return fmt.Sprintf("%d/%d bound", r.Bound, r.Pods)
	}
	return "never"
}

// ratio formats the ratio of muster's median to another runner's.
func (m metric) ratio(muster, other []Result) string {
	va, na := m.median(muster)
	vb, nb := m.median(other)
	if na == 0 || nb == 0 || vb == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", va/vb)
}

// rounds returns, for a figure of a report with several rounds, one line with each
// runner's figure per round and muster's ratio to each other runner per round.
func (rep *Report) rounds(m metric) string {
	byRunner := rep.byRunner(m.scenario)
	if len(byRunner) == 0 || rep.Rounds < 2 {
		return ""
	}
	var parts []string
	for _, runner := range Runners() {
		if rs := byRunner[runner]; len(rs) > 0 {
			parts = append(parts, runner+" "+perRound(rs, m.value, m.format))
		}
	}
	for _, pair := range ratios {
		mine, theirs := byRunner[pair[0]], byRunner[pair[1]]
		if len(mine) == 0 || len(theirs) != len(mine) {
			continue
		}
		ratio := func(r Result) (float64, bool) {
			a, okA := m.value(r)
			b, okB := m.value(theirs[r.Round-1])
			return a / b, okA && okB && b != 0
		}
		parts = append(parts, pair[0]+"/"+pair[1]+" "+perRound(mine, ratio, "%.2f"))
	}
	return fmt.Sprintf("%s, %s: %s", m.scenario, m.title(byRunner), strings.Join(parts, "; "))
}

// perRound formats f of each result, "—" where it has none, separated by slashes.
func perRound(rs []Result, f func(Result) (float64, bool), format string) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = "—"
		if v, ok := f(r); ok {
			parts[i] = fmt.Sprintf(format, v)
		}
	}
	return strings.Join(parts, " / ")
}

// WriteText writes the table aligned in columns, then any incomplete run, then the
// soak if it ran.
func (rep *Report) WriteText(w io.Writer) error {
	if len(rep.Results) == 0 {
		return rep.writeSoak(w, false)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rep.Rows() {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if err := rep.writeNotes(w); err != nil {
		return err
	}
	return rep.writeSoak(w, false)
}

// writeSoak writes the soak's figures and samples, if it ran.
func (rep *Report) writeSoak(w io.Writer, markdown bool) error {
	if rep.Soak == nil {
		return nil
	}
	return rep.Soak.write(w, markdown)
}

// WriteMarkdown writes the table as a Markdown table, then any incomplete run, then
// the soak if it ran.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	if len(rep.Results) == 0 {
		return rep.writeSoak(w, true)
	}
	for i, row := range rep.Rows() {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(row)))
		}
	}
	fmt.Fprintf(w, "\nClients of the runners with QPS raised: QPS %g, burst %d; kube-scheduler-defaults: QPS 50, burst 100; muster-defaults: deploy/'s Configuration (clientConnection as shipped).\n", rep.QPS, rep.Burst)
	if err := rep.writeNotes(w); err != nil {
		return err
	}
	return rep.writeSoak(w, true)
}

// writeNotes writes the figures of each round when there were several, the write
// requests of each run, then a line per run that did not complete.
func (rep *Report) writeNotes(w io.Writer) error {
	var b strings.Builder
	if rep.Rounds > 1 {
		fmt.Fprintf(&b, "\nEach figure above is the median of %d rounds; per round (round 1 / 2 / ...):\n", rep.Rounds)
		for _, m := range metrics {
			if line := rep.rounds(m); line != "" {
				fmt.Fprintf(&b, "- %s\n", line)
			}
		}
	}
	fmt.Fprintln(&b, "\nAPI write requests during each run (all clients):")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "- %s/%s round %d: %s\n", r.Scenario, r.Runner, r.Round, r.Writes)
		if r.TimedWrites != nil && r.Window == 0 {
			fmt.Fprintf(&b, "  - of which before the last bind: %s\n", r.TimedWrites)
		}
	}
	for _, r := range rep.Results {
		if r.Err != nil {
			fmt.Fprintf(&b, "\n%s/%s round %d incomplete: %v\n", r.Scenario, r.Runner, r.Round, r.Err)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the notes: %w", err)
	}
	return nil
}

// seconds formats d in seconds, or "never" if !ok.
func seconds(d time.Duration, ok bool) string {
	if !ok {
		return "never"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
