package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one runner did in one scenario.
type Result struct {
	// Scenario and Runner name the run.
	Scenario, Runner string
	// Pods is the workload's pod count, JobSize the pods (and minMember) of each job.
	Pods, JobSize int
	// Bound is how many pods were seen bound by the end of the run.
	Bound int
	// Window is the scenario's observation window, or 0 if it ran until all were bound.
	Window time.Duration
	// Span is from the first pod create to the last bind seen; 0 if none was bound.
	Span time.Duration
	// FirstWholeBound and FirstWholeReady are from the first create until the first job
	// had all its pods bound, and Ready; 0 with Whole* false if no job got there.
	FirstWholeBound, FirstWholeReady time.Duration
	WholeBound, WholeReady           bool
	// HeldGPUSeconds is the GPU time bound to jobs with fewer than JobSize pods bound,
	// over the window, or from the first create to the last bind.
	HeldGPUSeconds float64
	// Writes are the write requests the API server served from the runner's start to
	// its stop, from every client: the bench creating pods, the simulated kubelet, and
	// the scheduler.
	Writes requestCounts
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
	r.HeldGPUSeconds = t.heldGPUSeconds(from, to, sc.JobSize, 1)
}

// summary is a one-line account of the result, for progress output.
func (r Result) summary() string {
	s := fmt.Sprintf("%s/%s: %d/%d pods bound in %.2fs (%.1f pods/s), first job whole %s (Ready %s), %.2f GPU-s held by incomplete groups",
		r.Scenario, r.Runner, r.Bound, r.Pods, r.Span.Seconds(), r.PodsPerSecond(),
		seconds(r.FirstWholeBound, r.WholeBound), seconds(r.FirstWholeReady, r.WholeReady), r.HeldGPUSeconds)
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
	// Results are in the order the runs ran.
	Results []Result
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
	{ScenarioThroughput, "pods/s (first create → last bind)", podsPerSecond, "%.1f"},
	{ScenarioThroughput, "time to last bind (s)", timeToLastBind, "%.2f"},
	{ScenarioThroughput, "GPU-s held by incomplete groups", heldGPUSeconds, "%.2f"},
	{ScenarioThroughput, "API writes per bound pod (all clients)", writesPerPod, "%.2f"},
	{ScenarioBigGang, "time to last bind (s)", timeToLastBind, "%.2f"},
	{ScenarioBigGang, "pods/s (first create → last bind)", podsPerSecond, "%.1f"},
	{ScenarioBigGang, "API writes per bound pod (all clients)", writesPerPod, "%.2f"},
}

func heldGPUSeconds(r Result) (float64, bool) { return r.HeldGPUSeconds, true }

func podsPerSecond(r Result) (float64, bool) { return r.PodsPerSecond(), r.Bound == r.Pods }

func writesPerPod(r Result) (float64, bool) { return r.WritesPerPod(), r.Bound > 0 && r.Writes != nil }

func timeToLastBind(r Result) (float64, bool) { return r.Span.Seconds(), r.Bound == r.Pods }

// ratios are the ratio columns: muster's figure over each of these runners'.
var ratios = []string{RunnerUpstreamGang, RunnerUpstreamDefault, RunnerCeiling}

// Rows returns the table: a header row, then one row per figure of a scenario that
// ran, with a column per runner and per ratio. A missing figure (the runner did not
// run, or never got there) is "—"; "never" marks a job that was never whole.
func (rep *Report) Rows() [][]string {
	header := []string{"scenario", "figure"}
	header = append(header, Runners()...)
	for _, r := range ratios {
		header = append(header, "muster/"+r)
	}
	rows := [][]string{header}
	for _, m := range metrics {
		byRunner := map[string]Result{}
		for _, r := range rep.Results {
			if r.Scenario == m.scenario {
				byRunner[r.Runner] = r
			}
		}
		if len(byRunner) == 0 {
			continue
		}
		name := m.name
		if m.scenario == ScenarioSeed {
			name = strings.Replace(name, "held by incomplete groups", fmt.Sprintf("held by incomplete groups over %s", windowOf(byRunner)), 1)
		}
		row := []string{m.scenario, name}
		for _, runner := range Runners() {
			row = append(row, m.cell(byRunner, runner))
		}
		for _, other := range ratios {
			row = append(row, m.ratio(byRunner, other))
		}
		rows = append(rows, row)
	}
	return rows
}

// windowOf returns the observation window of the runs, formatted.
func windowOf(byRunner map[string]Result) string {
	for _, r := range byRunner {
		return r.Window.String()
	}
	return ""
}

// cell formats one runner's figure.
func (m metric) cell(byRunner map[string]Result, runner string) string {
	r, ran := byRunner[runner]
	if !ran {
		return "—"
	}
	v, ok := m.value(r)
	switch {
	case ok:
		return fmt.Sprintf(m.format, v)
	case r.Bound < r.Pods && r.Window == 0:
		return fmt.Sprintf("%d/%d bound", r.Bound, r.Pods)
	default:
		return "never"
	}
}

// ratio formats muster's figure over other's.
func (m metric) ratio(byRunner map[string]Result, other string) string {
	a, okA := byRunner[RunnerMuster]
	b, okB := byRunner[other]
	if !okA || !okB {
		return "—"
	}
	va, okA := m.value(a)
	vb, okB := m.value(b)
	if !okA || !okB || vb == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", va/vb)
}

// WriteText writes the table aligned in columns, then any incomplete run.
func (rep *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rep.Rows() {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return rep.writeNotes(w)
}

// WriteMarkdown writes the table as a Markdown table, then any incomplete run.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	for i, row := range rep.Rows() {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(row)))
		}
	}
	fmt.Fprintf(w, "\nEvery scheduler's client: QPS %g, burst %d.\n", rep.QPS, rep.Burst)
	return rep.writeNotes(w)
}

// writeNotes writes the write requests of each run, then a line per run that did not
// complete.
func (rep *Report) writeNotes(w io.Writer) error {
	if _, err := fmt.Fprintln(w, "\nAPI write requests during each run (all clients):"); err != nil {
		return fmt.Errorf("writing the notes: %w", err)
	}
	for _, r := range rep.Results {
		if _, err := fmt.Fprintf(w, "- %s/%s: %s\n", r.Scenario, r.Runner, r.Writes); err != nil {
			return fmt.Errorf("writing the notes: %w", err)
		}
	}
	for _, r := range rep.Results {
		if r.Err != nil {
			if _, err := fmt.Fprintf(w, "\n%s/%s incomplete: %v\n", r.Scenario, r.Runner, r.Err); err != nil {
				return fmt.Errorf("writing the notes: %w", err)
			}
		}
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
