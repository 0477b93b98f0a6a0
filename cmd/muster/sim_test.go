package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/sim"
)

// runSimArgs runs muster sim with args and returns what it printed.
func runSimArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newSimCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--out", t.TempDir()))
	err := cmd.Execute()
	return out.String(), err
}

// TestSimRounds replays a slice of the trace in rounds: each policy's wall times, then
// its CPU times, are listed with their median (the table shows the wall time's), the
// others' are given as multiples of the first policy's, and a round count below one is
// refused.
func TestSimRounds(t *testing.T) {
	out, err := runSimArgs(t, "--from", "2017-10-01", "--limit", "60", "--cluster", "8x8gpu", "--rounds", "3")
	if err != nil {
		t.Fatalf("muster sim --rounds 3: %v\n%s", err, out)
	}
	for _, want := range []string{"wall time over 3 rounds", "CPU time over the same rounds",
		"permit-wait took ", "muster took ", "× pod-by-pod's wall time and ",
		"jobs started the instant they arrived: muster ", "that muster did not, "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, policy := range []string{"pod-by-pod", "permit-wait", "muster"} {
		var lines []string
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, policy+" ") && strings.Contains(l, "median") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 2 || strings.Count(lines[0], ",") != 2 || strings.Count(lines[1], ",") != 2 || strings.Contains(lines[1], " 0s") {
			t.Errorf("%s: want its median and three wall times, then the same of CPU times (none zero), got %q", policy, lines)
		}
	}
	if out, err := runSimArgs(t, "--limit", "10", "--rounds", "0"); err == nil || !strings.Contains(err.Error(), "--rounds 0") {
		t.Errorf("muster sim --rounds 0: err %v, want one naming the flag and value\n%s", err, out)
	}
}

func TestMedianAndSameOutcome(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, v := range n {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{ms(7), 7 * time.Millisecond},
		{ms(9, 3, 5), 5 * time.Millisecond},
		{ms(9, 3, 5, 4), 5 * time.Millisecond},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	a := sim.Summary{Finished: 3, Delays: ms(1, 2, 3)}
	b := a
	b.Wall = time.Hour // wall time is not an outcome
	if !sameOutcome(a, b) {
		t.Errorf("summaries differing only in wall time: not the same outcome")
	}
	b.Delays = ms(1, 2, 4)
	if sameOutcome(a, b) {
		t.Errorf("summaries with different delays: the same outcome")
	}
}
