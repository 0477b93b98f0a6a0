package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Slope is the least-squares slope of value over the samples taken at or after
// from, per minute; ok is false with fewer than two such samples at distinct times.
func Slope(samples []SoakSample, from time.Duration, value func(SoakSample) float64) (perMinute float64, ok bool) {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples {
		if s.At < from {
			continue
		}
		x, y := s.At.Minutes(), value(s)
		n++
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	den := n*sxx - sx*sx
	if n < 2 || den <= 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / den, true
}

// rssMiB and heapMiB are a sample's RSS and heap in MiB.
func rssMiB(s SoakSample) float64  { return mib(s.RSS) }
func heapMiB(s SoakSample) float64 { return mib(s.Heap) }

// spread is the first, last and largest of value over the samples at or after
// from; ok is false if there is none.
func spread(samples []SoakSample, from time.Duration, value func(SoakSample) float64) (first, last, most float64, ok bool) {
	for _, s := range samples {
		if s.At < from {
			continue
		}
		v := value(s)
		if !ok {
			first, most, ok = v, v, true
		}
		last, most = v, max(most, v)
	}
	return first, last, most, ok
}

// summary is the soak's figures, one per line.
func (r *SoakResult) summary() []string {
	lines := []string{
		fmt.Sprintf("setup: %d nodes × %d GPUs, `muster serve` as deployed; %d gangs in flight, of %v one-GPU pods in turn, even ones native PodGroups, odd ones by label (muster.dev/group); each deleted (pods and group) once all its pods are Ready, and replaced by a gang of a new name",
			r.Nodes, r.GPUsPerNode, r.Live, soakSizes),
		fmt.Sprintf("duration: %s of churn; warm-up cut: the first %s; %d samples", r.Duration, r.WarmUp, len(r.Samples)),
		fmt.Sprintf("groups: %d created, %d deleted, %d not Ready within %s (deleted anyway); %d pods bound", r.Created, r.Deleted, r.Stalled, soakGangTimeout, r.PodsBound),
	}
	for _, f := range []struct {
		name  string
		value func(SoakSample) float64
	}{{"RSS", rssMiB}, {"heap in use", heapMiB}} {
		first, last, most, ok := spread(r.Samples, r.WarmUp, f.value)
		slope, sok := Slope(r.Samples, r.WarmUp, f.value)
		if !ok || !sok {
			lines = append(lines, fmt.Sprintf("%s after warm-up: too few samples", f.name))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s after warm-up: first %.1f MiB, last %.1f MiB, max %.1f MiB; slope %+.3f MiB/min", f.name, first, last, most, slope))
	}
	goroutines := func(s SoakSample) float64 { return s.Goroutines }
	if first, last, most, ok := spread(r.Samples, r.WarmUp, goroutines); ok {
		slope, _ := Slope(r.Samples, r.WarmUp, goroutines)
		lines = append(lines, fmt.Sprintf("goroutines after warm-up: first %.0f, last %.0f, max %.0f; slope %+.1f/min", first, last, most, slope))
	}
	if a := r.After; a != nil {
		lines = append(lines, fmt.Sprintf("after the churn, every gang deleted (%s): %v groups tracked, RSS %.1f MiB, heap in use %.1f MiB", a.At.Round(time.Second), a.Tracked, rssMiB(*a), heapMiB(*a)))
	}
	if r.Err != nil {
		lines = append(lines, fmt.Sprintf("incomplete: %v", r.Err))
	}
	return lines
}

// rows are the samples as a table, with a header row; the sample after the churn
// is the last row.
func (r *SoakResult) rows() [][]string {
	rows := [][]string{{"t (s)", "RSS (MiB)", "heap in use (MiB)", "goroutines", "groups tracked", "created", "deleted", ""}}
	row := func(s SoakSample, note string) []string {
		return []string{
			strconv.FormatFloat(s.At.Seconds(), 'f', 0, 64), fmt.Sprintf("%.1f", rssMiB(s)), fmt.Sprintf("%.1f", heapMiB(s)),
			strconv.FormatFloat(s.Goroutines, 'f', -1, 64), strconv.FormatFloat(s.Tracked, 'f', -1, 64), strconv.FormatInt(s.Created, 10), strconv.FormatInt(s.Deleted, 10), note,
		}
	}
	for _, s := range r.Samples {
		note := ""
		if s.At < r.WarmUp {
			note = "warm-up"
		}
		rows = append(rows, row(s, note))
	}
	if r.After != nil {
		rows = append(rows, row(*r.After, "after the churn"))
	}
	return rows
}

// write writes the soak's figures and its samples, as Markdown or aligned text.
func (r *SoakResult) write(w io.Writer, markdown bool) error {
	var b strings.Builder
	fmt.Fprintln(&b, "\nSoak:")
	for _, l := range r.summary() {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	fmt.Fprintln(&b)
	if markdown {
		for i, row := range r.rows() {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
			if i == 0 {
				fmt.Fprintf(&b, "|%s\n", strings.Repeat(" --- |", len(row)))
			}
		}
	} else {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, row := range r.rows() {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the soak's samples: %w", err)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the soak: %w", err)
	}
	return nil
}

// WriteCSV writes the soak's samples as CSV: seconds, bytes, counts.
func (r *SoakResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	rec := func(s SoakSample, phase string) []string {
		return []string{
			strconv.FormatFloat(s.At.Seconds(), 'f', 1, 64), strconv.FormatUint(s.RSS, 10), strconv.FormatUint(s.Heap, 10),
			strconv.FormatFloat(s.Goroutines, 'f', -1, 64), strconv.FormatFloat(s.Tracked, 'f', -1, 64), strconv.FormatInt(s.Created, 10), strconv.FormatInt(s.Deleted, 10), phase,
		}
	}
	_ = cw.Write([]string{"seconds", "rss_bytes", "heap_inuse_bytes", "goroutines", "tracked_groups", "created", "deleted", "phase"})
	for _, s := range r.Samples {
		phase := "measured"
		if s.At < r.WarmUp {
			phase = "warm-up"
		}
		_ = cw.Write(rec(s, phase))
	}
	if r.After != nil {
		_ = cw.Write(rec(*r.After, "after"))
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing the soak's CSV: %w", err)
	}
	return nil
}
