package sim

import (
	"cmp"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strings"
	"time"
)

// Summary is one policy's outcome on a replay.
type Summary struct {
	Policy   string
	Jobs     int
	Finished int
	// Stalls are the deadlock episodes (see Options.StallThreshold).
	Stalls []Stall
	// HeldGPUHours is GPU time held by incomplete groups: bound to, or reserved for, a
	// group with fewer than MinMember members bound.
	HeldGPUHours float64
	// Queueing is submit → all workers Ready, over jobs that got there; Completion is
	// submit → finished, over finished jobs.
	Queueing, Completion Dist
	// Delays are the queueing delays, sorted, for the CDF.
	Delays []time.Duration
	// Utilisation is useful GPU time / (GPUs × Makespan).
	Utilisation float64
	// Evicted counts member pods the scheduler evicted (timeouts, preemption, reclaim).
	Evicted int
	// Makespan is from the first arrival to the last finish (to the end of the run if no
	// job finished).
	Makespan time.Duration
	// StartErrors are, for the jobs that were given an expected start, how far it was
	// from the start they got (actual − predicted: positive when late), sorted by
	// magnitude.
	StartErrors []time.Duration
	// Wall is the real time the replay took, filled in by the caller.
	Wall time.Duration
}

// Dist summarises durations.
type Dist struct {
	N              int
	Mean, P50, P99 time.Duration
}

// Summarise measures a replayed world on a cluster of gpus GPUs.
func Summarise(policy string, w *World, gpus int) Summary {
	s := Summary{Policy: policy, Stalls: w.Stalls()}
	var completion []time.Duration
	var last time.Time
	for _, j := range w.Jobs() { // in order: a float sum's last digits depend on it
		s.Jobs++
		s.HeldGPUHours += j.HeldIncomplete / 3600
		s.Evicted += j.Evictions
		if !j.Ready.IsZero() {
			s.Delays = append(s.Delays, j.Ready.Sub(j.Submitted))
		}
		if !j.Predicted.IsZero() && !j.Whole.IsZero() {
			s.StartErrors = append(s.StartErrors, j.Whole.Sub(j.Predicted))
		}
		if !j.Finished.IsZero() {
			s.Finished++
			completion = append(completion, j.Finished.Sub(j.Submitted))
			if j.Finished.After(last) {
				last = j.Finished
			}
		}
	}
	if last.IsZero() {
		last = w.now
	}
	s.Makespan = last.Sub(Epoch)
	if s.Makespan > 0 && gpus > 0 {
		s.Utilisation = w.UsefulGPUSeconds() / (float64(gpus) * s.Makespan.Seconds())
	}
	slices.Sort(s.Delays)
	slices.Sort(completion)
	slices.SortFunc(s.StartErrors, cmpAbs)
	s.Queueing, s.Completion = distOf(s.Delays), distOf(completion)
	return s
}

// cmpAbs orders durations by magnitude, an early one before a late one of the same
// magnitude: the jobs are read from a map, and the order must not depend on it.
func cmpAbs(a, b time.Duration) int {
	if c := cmp.Compare(a.Abs(), b.Abs()); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// StartError returns the median and p90 of the expected-start errors' magnitudes, and
// how many jobs had an expected start.
func (s Summary) StartError() (p50, p90 time.Duration, n int) {
	n = len(s.StartErrors)
	if n == 0 {
		return 0, 0, 0
	}
	at := func(q float64) time.Duration { return s.StartErrors[min(n-1, int(q*float64(n)))].Abs() }
	return at(0.5), at(0.9), n
}

// distOf summarises sorted durations; percentiles are nearest-rank.
func distOf(sorted []time.Duration) Dist {
	d := Dist{N: len(sorted)}
	if d.N == 0 {
		return d
	}
	var sum float64
	for _, v := range sorted {
		sum += v.Seconds()
	}
	d.Mean = time.Duration(sum / float64(d.N) * float64(time.Second))
	rank := func(p float64) time.Duration {
		i := int(p*float64(d.N)+0.999999) - 1
		return sorted[min(max(i, 0), d.N-1)]
	}
	d.P50, d.P99 = rank(0.50), rank(0.99)
	return d
}

// StallTime is the total length of the deadlock episodes.
func (s Summary) StallTime() time.Duration {
	var d time.Duration
	for _, st := range s.Stalls {
		d += st.To.Sub(st.From)
	}
	return d
}

// WriteTable writes one Markdown table row per summary.
func WriteTable(out io.Writer, sums []Summary) {
	header := []string{"policy", "jobs finished", "deadlock episodes (total)", "GPU-h held by incomplete groups",
		"queueing mean / p50 / p99", "JCT mean / p50 / p99", "GPU utilisation", "pods evicted", "expected-start error p50 / p90 (jobs)", "makespan", "wall time"}
	rows := [][]string{header}
	for _, s := range sums {
		rows = append(rows, []string{
			s.Policy,
			fmt.Sprintf("%d / %d", s.Finished, s.Jobs),
			fmt.Sprintf("%d (%s)", len(s.Stalls), human(s.StallTime())),
			fmt.Sprintf("%.1f", s.HeldGPUHours),
			fmt.Sprintf("%s / %s / %s", human(s.Queueing.Mean), human(s.Queueing.P50), human(s.Queueing.P99)),
			fmt.Sprintf("%s / %s / %s", human(s.Completion.Mean), human(s.Completion.P50), human(s.Completion.P99)),
			fmt.Sprintf("%.1f%%", 100*s.Utilisation),
			fmt.Sprint(s.Evicted),
			startErrorCell(s),
			human(s.Makespan),
			s.Wall.Round(10 * time.Millisecond).String(),
		})
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			fmt.Fprintf(&b, "| %-*s ", widths[i], c)
		}
		fmt.Fprintln(out, b.String()+"|")
	}
	line(rows[0])
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", widths[i])
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}

// human renders a duration compactly: 45s, 12.5m, 3.2h, 4.1d.
func human(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1fm", d.Minutes())
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1fh", d.Hours())
	}
	return fmt.Sprintf("%.1fd", d.Hours()/24)
}

func startErrorCell(s Summary) string {
	p50, p90, n := s.StartError()
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s / %s (%d)", human(p50), human(p90), n)
}

// Shortfall compares two policies' queueing-delay CDFs: the largest fraction of jobs
// by which a's CDF falls below b's, and the delay where it does; zero when a's CDF is at
// or above b's over the whole range (at every delay, at least as large a fraction of
// a's jobs had started). Delays must be sorted, as Summarise leaves them.
func Shortfall(a, b Summary) (fraction float64, at time.Duration) {
	for x, gap := range cdfGaps(a, b) {
		if gap > fraction {
			fraction, at = gap, x
		}
	}
	return fraction, at
}

// AtOrAboveFrom is the delay from which on a's queueing-delay CDF is at or above b's
// (a CDF is a step function: it is at or above from the delay where it last comes back
// up to b's); zero when it is at or above over the whole range.
func AtOrAboveFrom(a, b Summary) time.Duration {
	var from time.Duration
	below := false
	for x, gap := range cdfGaps(a, b) {
		switch {
		case gap > 0:
			below = true
		case below:
			from, below = x, false
		}
	}
	return from
}

// cdfGaps yields, at each delay of a or b in increasing order, by how large a fraction
// of jobs b's CDF is above a's there (negative where it is below).
func cdfGaps(a, b Summary) iter.Seq2[time.Duration, float64] {
	return func(yield func(time.Duration, float64) bool) {
		da, db := a.Delays, b.Delays
		if len(da) == 0 || len(db) == 0 {
			return
		}
		i, j := 0, 0
		for i < len(da) || j < len(db) {
			// The next delay of either, and every job of both that started by then.
			x := db[min(j, len(db)-1)]
			if j == len(db) || i < len(da) && da[i] < x {
				x = da[i]
			}
			for i < len(da) && da[i] <= x {
				i++
			}
			for j < len(db) && db[j] <= x {
				j++
			}
			if !yield(x, float64(j)/float64(len(db))-float64(i)/float64(len(da))) {
				return
			}
		}
	}
}

// WriteDominance writes, for each policy but muster, whether muster's queueing-delay
// CDF is at or above that policy's over the whole range, and where it falls furthest
// below when it is not; then, for each two other policies, whether either's CDF is at
// or above the other's, or where each falls furthest below the other's: how far apart
// the policies muster is compared with are.
func WriteDominance(out io.Writer, sums []Summary) {
	writeMusterDominance(out, sums)
	for i, a := range sums {
		for _, b := range sums[i+1:] {
			if a.Policy == "muster" || b.Policy == "muster" {
				continue
			}
			fa, atA := Shortfall(a, b)
			fb, atB := Shortfall(b, a)
			switch {
			case fa == 0:
				fmt.Fprintf(out, "%s's queueing-delay CDF is at or above %s's over its whole range\n", a.Policy, b.Policy)
			case fb == 0:
				fmt.Fprintf(out, "%s's queueing-delay CDF is at or above %s's over its whole range\n", b.Policy, a.Policy)
			default:
				fmt.Fprintf(out, "%s's and %s's queueing-delay CDFs cross: %s's falls below by up to %.2f%% of jobs%s (at %s), %s's by up to %.2f%% of jobs%s (at %s)\n",
					a.Policy, b.Policy, a.Policy, 100*fa, jobsOf(fa, a, b), human(atA), b.Policy, 100*fb, jobsOf(fb, b, a), human(atB))
			}
		}
	}
}

// writeMusterDominance writes WriteDominance's lines of muster against each other
// policy.
func writeMusterDominance(out io.Writer, sums []Summary) {
	var m *Summary
	for i := range sums {
		if sums[i].Policy == "muster" {
			m = &sums[i]
		}
	}
	if m == nil {
		return
	}
	for _, s := range sums {
		if s.Policy == m.Policy {
			continue
		}
		if f, at := Shortfall(*m, s); f == 0 {
			fmt.Fprintf(out, "muster's queueing-delay CDF is at or above %s's over its whole range\n", s.Policy)
		} else {
			fmt.Fprintf(out, "muster's queueing-delay CDF falls below %s's by up to %.2f%% of jobs%s (at %s), and is at or above it from %s on\n",
				s.Policy, 100*f, jobsOf(f, *m, s), human(at), AtOrAboveFrom(*m, s).Round(time.Millisecond))
		}
	}
}

// jobsOf renders a shortfall f between two CDFs over the same number of jobs as a count
// of jobs, ", N of M", so that a reader sees whether a fraction is a handful of jobs or
// many; "" when the CDFs count different numbers of jobs.
func jobsOf(f float64, a, b Summary) string {
	n := len(a.Delays)
	if n == 0 || n != len(b.Delays) {
		return ""
	}
	return fmt.Sprintf(", %d of %d", int(math.Round(f*float64(n))), n)
}
