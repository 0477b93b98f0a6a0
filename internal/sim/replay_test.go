package sim

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/muster-sched/muster/internal/trace"
)

// handTrace is a three-job trace on a 2×8-GPU cluster: c (1 GPU) submitted at cAt, and two
// 16-GPU jobs a and b submitted together at abAt; each runs ten minutes.
func handTrace(cAt, abAt time.Duration) []trace.Job {
	t0 := time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC)
	job := func(at time.Duration, gpus int) trace.Job {
		return trace.Job{Submit: t0.Add(at), Duration: 10 * time.Minute, GPUs: gpus, Cluster: "x"}
	}
	// Sorted by submit time, stably: names j000000.. follow this order at equal times.
	if cAt < abAt {
		return []trace.Job{job(cAt, 1), job(abAt, 16), job(abAt, 16)}
	}
	return []trace.Job{job(abAt, 16), job(abAt, 16), job(cAt, 1)}
}

var handConfig = ReplayConfig{Cluster: Cluster{Nodes: 2, GPUsPerNode: 8}, Horizon: time.Hour, StallThreshold: 10 * time.Minute}

type outcome struct {
	finished string // Summary(): who finished when
	heldGPUs float64
	stalls   int
}

func replayHand(t *testing.T, jobs []trace.Job, sched Scheduler) outcome {
	t.Helper()
	w := Replay(jobs, sched, handConfig)
	return outcome{finished: w.Summary(), heldGPUs: w.HeldIncomplete(), stalls: len(w.Stalls())}
}

// TestPoliciesTogether submits two 16-GPU jobs and a 1-GPU job at once, pods interleaved
// (a-0, b-0, c-0, a-1, b-1). Pod-by-pod gives a and b one node each and deadlocks for the
// whole hour; the 1-GPU job never fits. Coscheduling's queue order keeps a's members
// together, so permit-wait admits a whole, then b, then c, like muster.
func TestPoliciesTogether(t *testing.T) {
	jobs := handTrace(0, 0)
	for _, tc := range []struct {
		name  string
		sched Scheduler
		want  outcome
	}{
		{"pod-by-pod", NewPodByPod(), outcome{
			finished: "j000000 unfinished, j000001 unfinished, j000002 unfinished",
			heldGPUs: 16 * 3600, stalls: 1}},
		{"permit-wait", NewPermitWait(time.Minute, 10*time.Second), outcome{
			finished: "j000000 finished at 10m, j000001 finished at 20m, j000002 finished at 30m"}},
		{"muster", NewEngine(), outcome{
			finished: "j000000 finished at 10m, j000001 finished at 20m, j000002 finished at 30m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := replayHand(t, jobs, tc.sched); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestPoliciesBehindSmallJob submits the 1-GPU job first; it takes a GPU of one node for
// ten minutes, so neither 16-GPU job fits until it ends.
//
// Pod-by-pod: a-0 takes the free node and holds it; when c ends, b-0 (created before a-1)
// takes the other, and a and b deadlock for the rest of the hour.
//
// Permit-wait: a-0 is reserved on the free node and waits at the barrier; after the 60 s
// timeout a is denied for 10 s and b's first member takes the node, and so on: 8 GPUs are
// held by an incomplete group from 1 s to 600 s. At 600 s both hold a node for one
// second, until b's timeout lets a complete; b follows when a ends.
//
// Muster holds nothing while a and b wait, and runs them one after the other.
func TestPoliciesBehindSmallJob(t *testing.T) {
	jobs := handTrace(0, time.Second)
	for _, tc := range []struct {
		name  string
		sched Scheduler
		want  outcome
	}{
		{"pod-by-pod", NewPodByPod(), outcome{
			finished: "j000000 finished at 10m, j000001 unfinished, j000002 unfinished",
			heldGPUs: 8*599 + 16*(3601-600), stalls: 1}},
		{"permit-wait", NewPermitWait(time.Minute, 10*time.Second), outcome{
			finished: "j000000 finished at 10m, j000001 finished at 20m1s, j000002 finished at 30m1s",
			heldGPUs: 8*599 + 16*1, stalls: 1}},
		{"muster", NewEngine(), outcome{
			finished: "j000000 finished at 10m, j000001 finished at 20m, j000002 finished at 30m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := replayHand(t, jobs, tc.sched); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestShortfall(t *testing.T) {
	d := func(mins ...int) Summary {
		var s Summary
		for _, m := range mins {
			s.Delays = append(s.Delays, time.Duration(m)*time.Minute)
		}
		return s
	}
	for _, tc := range []struct {
		a, b     Summary
		fraction float64
		at, from time.Duration
	}{
		{d(1, 2, 3, 4), d(1, 2, 3, 4), 0, 0, 0},
		{d(1, 1, 2, 3), d(1, 2, 3, 4), 0, 0, 0},
		// b has half its jobs started by 2 minutes, a a quarter.
		{d(1, 3, 3, 4), d(1, 2, 3, 4), 0.25, 2 * time.Minute, 3 * time.Minute},
		// Different counts: a's 2 of 3 by 5 minutes against b's 1 of 1 by 1 minute.
		{d(1, 5, 9), d(1), 2.0 / 3, time.Minute, 9 * time.Minute},
		// a falls below twice, the second time by less: the largest gap is in the
		// first, and a is at or above b once it comes back up after the second.
		{d(3, 3, 3, 6, 6), d(1, 2, 3, 5, 6), 0.4, 2 * time.Minute, 6 * time.Minute},
	} {
		if f, at := Shortfall(tc.a, tc.b); math.Abs(f-tc.fraction) > 1e-9 || at != tc.at {
			t.Errorf("Shortfall(%v, %v) = %v at %v, want %v at %v", tc.a.Delays, tc.b.Delays, f, at, tc.fraction, tc.at)
		}
		if got := AtOrAboveFrom(tc.a, tc.b); got != tc.from {
			t.Errorf("AtOrAboveFrom(%v, %v) = %v, want %v", tc.a.Delays, tc.b.Delays, got, tc.from)
		}
	}
	// fewer started fewer jobs: its shortfall is a fraction only.
	m, other, same, fewer := d(1, 3, 3, 4), d(1, 2, 3, 4), d(1, 3, 3, 4), d(1, 2)
	m.Policy, other.Policy, same.Policy, fewer.Policy = "muster", "other", "same", "fewer"
	var out bytes.Buffer
	WriteDominance(&out, []Summary{other, same, fewer, m})
	want := "muster's queueing-delay CDF falls below other's by up to 25.00% of jobs, 1 of 4 (at 2.0m), and is at or above it from 3m0s on\n" +
		"muster's queueing-delay CDF is at or above same's over its whole range\n" +
		"muster's queueing-delay CDF falls below fewer's by up to 75.00% of jobs (at 2.0m), and is at or above it from 4m0s on\n" +
		"other's queueing-delay CDF is at or above same's over its whole range\n" +
		"fewer's queueing-delay CDF is at or above other's over its whole range\n" +
		"fewer's queueing-delay CDF is at or above same's over its whole range\n"
	if out.String() != want {
		t.Errorf("WriteDominance wrote\n%s\nwant\n%s", out.String(), want)
	}
	// late starts half its jobs sooner than other and the rest later: the CDFs cross.
	late := d(1, 1, 5, 5)
	late.Policy = "late"
	out.Reset()
	WriteDominance(&out, []Summary{other, late})
	want = "other's and late's queueing-delay CDFs cross: other's falls below by up to 25.00% of jobs, 1 of 4 (at 1.0m), late's by up to 50.00% of jobs, 2 of 4 (at 4.0m)\n"
	if out.String() != want {
		t.Errorf("WriteDominance wrote\n%s\nwant\n%s", out.String(), want)
	}
}

// TestStartErrorOrder checks that start errors sort by magnitude, then early before late,
// whatever order the jobs were read in: muster sim --rounds compares two replays' lists.
func TestStartErrorOrder(t *testing.T) {
	want := []time.Duration{0, -3 * time.Second, 3 * time.Second, -5 * time.Second, 5 * time.Second}
	for _, in := range [][]time.Duration{
		{5 * time.Second, -5 * time.Second, 3 * time.Second, 0, -3 * time.Second},
		{-3 * time.Second, 0, -5 * time.Second, 3 * time.Second, 5 * time.Second},
	} {
		got := slices.Clone(in)
		slices.SortFunc(got, cmpAbs)
		if !slices.Equal(got, want) {
			t.Errorf("%v sorted to %v, want %v", in, got, want)
		}
	}
}

// TestRetiredWorldMeasuresTheSame replays two days of Philly under muster and pod-by-pod
// and checks that what muster sim reads from a world after the replay (its summary, the
// comparison of instant starts, the recorded occupancy, the nodes' GPUs) is the same
// once both worlds are retired.
func TestRetiredWorldMeasuresTheSame(t *testing.T) {
	all, err := trace.Philly()
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC)
	var jobs []trace.Job
	for _, j := range all {
		if !j.Submit.Before(from) && j.Submit.Before(from.Add(48*time.Hour)) {
			jobs = append(jobs, j)
		}
	}
	cfg := ReplayConfig{Cluster: Cluster{Nodes: 8, GPUsPerNode: 8}, Load: 2, ReadyAfter: 30 * time.Second, Seed: 1,
		Horizon: 30 * 24 * time.Hour, StallThreshold: 10 * time.Minute, Estimate: 1}
	m, p := Replay(jobs, NewEngine(), cfg), Replay(jobs, NewPodByPod(), cfg)
	gpus := cfg.Cluster.GPUs()
	type measures struct {
		M, P       Summary
		Instant    InstantStarts
		OccM, OccP []Occupancy
		// GPUs is the capacity CompareInstantStarts reads from the nodes.
		GPUs int64
	}
	read := func() measures {
		return measures{Summarise("muster", m, gpus), Summarise("pod-by-pod", p, gpus), CompareInstantStarts(m, p),
			slices.Clone(m.Occupancy()), slices.Clone(p.Occupancy()), m.gpus()}
	}
	before := read()
	if before.M.Finished == 0 || before.Instant.A == 0 || len(before.OccM) == 0 {
		t.Fatalf("the replay measured nothing to compare: %d jobs finished, %d started at once, %d occupancy points",
			before.M.Finished, before.Instant.A, len(before.OccM))
	}
	m.Retire()
	p.Retire()
	if diff := cmp.Diff(before, read()); diff != "" {
		t.Errorf("retired worlds measure differently (-before +after):\n%s", diff)
	}
}
