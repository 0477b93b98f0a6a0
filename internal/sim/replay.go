package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/muster-sched/muster/internal/trace"
)

// Cluster is a homogeneous simulated cluster: Nodes machines of GPUsPerNode GPUs.
type Cluster struct {
	Nodes, GPUsPerNode int
}

// ParseCluster parses "NODESxGPUSgpu", e.g. "128x8gpu".
func ParseCluster(s string) (Cluster, error) {
	n, g, ok := strings.Cut(strings.TrimSuffix(s, "gpu"), "x")
	nodes, err1 := strconv.Atoi(n)
	gpus, err2 := strconv.Atoi(g)
	if !ok || !strings.HasSuffix(s, "gpu") || err1 != nil || err2 != nil || nodes < 1 || gpus < 1 {
		return Cluster{}, fmt.Errorf("cluster %q: want NODESxGPUSgpu with positive counts, e.g. 128x8gpu", s)
	}
	return Cluster{Nodes: nodes, GPUsPerNode: gpus}, nil
}

// GPUs returns the cluster's GPU count.
func (c Cluster) GPUs() int { return c.Nodes * c.GPUsPerNode }

// ReplayConfig says how a trace becomes simulated jobs.
type ReplayConfig struct {
	Cluster Cluster
	// OneGPUWorkers makes a job of N GPUs a gang of N one-GPU workers instead of
	// ceil(N/GPUsPerNode) workers of min(N, GPUsPerNode).
	OneGPUWorkers bool
	// Load scales arrivals: 2 makes inter-arrival times half as long. Zero means 1.
	Load float64
	// ReadyAfter is the mean time from bind to Ready; each job draws its own uniformly
	// from [ReadyAfter/2, 3·ReadyAfter/2] with Seed.
	ReadyAfter time.Duration
	Seed       uint64
	// Horizon is how long to keep simulating after the last arrival when jobs remain.
	Horizon time.Duration
	// StallThreshold is the shortest deadlock episode (see Options.StallThreshold).
	StallThreshold time.Duration
	// Teams puts each job in the queue of its virtual cluster (TeamQueue); the
	// scheduler must have those queues (TeamQueues).
	Teams bool
	// Estimate is how the jobs declare their run times (Job.Declared): zero declares
	// none; 1 declares the trace's duration; a factor f > 1 declares the duration
	// times a factor drawn uniformly in [1, 2f-1] with Seed (mean f), as users who
	// over-declare do.
	Estimate float64
}

// Replay submits the trace's jobs to a world driven by sched, in simulated time, and runs
// it until every job finished or Horizon after the last arrival. When jobs remain
// unfinished the clock runs on to that limit even if nothing can change any more (a
// deadlock), so that capacity they hold counts until then. Jobs submitted at the same instant have their pods created interleaved, as
// concurrent operators would. The trace's durations are each job's useful run time.
func Replay(jobs []trace.Job, sched Scheduler, cfg ReplayConfig) *World {
	w := NewWithOptions(sched, Options{Quiet: true, CollectFinished: true, RecordOccupancy: true, StallThreshold: cfg.StallThreshold})
	for i := 0; i < cfg.Cluster.Nodes; i++ {
		w.AddNode(gpuNode(fmt.Sprintf("node-%04d", i), int64(cfg.Cluster.GPUsPerNode)))
	}
	last := w.now
	for _, batch := range arrivals(jobs, cfg) {
		at := batch[0].Submitted
		w.at(at, func() { w.SubmitInterleaved(batch...) })
		last = at
	}
	limit := last.Add(cfg.Horizon)
	w.RunUntilIdle(limit)
	for _, j := range w.jobs {
		if j.Finished.IsZero() {
			w.RunUntil(limit)
			break
		}
	}
	return w
}

// arrivals turns trace jobs into simulated jobs, sorted by submit time and batched by
// simulated arrival instant. Submitted holds each batch's arrival time until Submit.
func arrivals(jobs []trace.Job, cfg ReplayConfig) [][]*Job {
	sorted := slices.Clone(jobs)
	slices.SortStableFunc(sorted, func(a, b trace.Job) int { return a.Submit.Compare(b.Submit) })
	load := cfg.Load
	if load == 0 {
		load = 1
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d7573746572))
	// Estimates draw from their own source, so that the ready times do not depend on them.
	est := rand.New(rand.NewPCG(cfg.Seed, 0x657374696d617465))
	var out [][]*Job
	for i, tj := range sorted {
		workers, each := tj.Gang(cfg.Cluster.GPUsPerNode, cfg.OneGPUWorkers)
		offset := time.Duration(float64(tj.Submit.Sub(sorted[0].Submit)) / load).Truncate(time.Second)
		ready := cfg.ReadyAfter
		if ready > 0 {
			ready = ready/2 + time.Duration(rng.Int64N(int64(ready)))
		}
		j := &Job{
			Name: fmt.Sprintf("j%06d", i), Workers: workers, GPU: int64(each),
			RunFor: tj.Duration, ReadyAfter: ready, Submitted: Epoch.Add(offset),
			Declared: declared(tj.Duration, cfg.Estimate, est),
		}
		if cfg.Teams {
			j.Queue = TeamQueue(tj.Cluster)
		}
		if n := len(out); n > 0 && out[n-1][0].Submitted.Equal(j.Submitted) {
			out[n-1] = append(out[n-1], j)
		} else {
			out = append(out, []*Job{j})
		}
	}
	return out
}

// declared is the run time a job of duration d declares under estimate factor f (see
// ReplayConfig.Estimate), at least a second.
func declared(d time.Duration, f float64, rng *rand.Rand) time.Duration {
	if f <= 0 {
		return 0
	}
	if f > 1 {
		f = 1 + rng.Float64()*2*(f-1)
	}
	return max(time.Duration(float64(d)*f).Round(time.Second), time.Second)
}

// RunUntilIdle runs events and scheduler wake-ups until none is left or the next is
// after limit.
func (w *World) RunUntilIdle(limit time.Time) {
	for {
		next := w.wake
		if !next.After(w.now) {
			next = time.Time{}
		}
		if len(w.events) > 0 && (next.IsZero() || w.events[0].at.Before(next)) {
			next = w.events[0].at
		}
		if next.IsZero() || next.After(limit) {
			w.refresh()
			return
		}
		w.RunUntil(next)
	}
}

// Retire drops what only running the world needs (the scheduler, the pods and each
// job's pods) and keeps what summaries, comparisons and plots read: the jobs' times and
// measures, the recorded occupancy and the nodes. A retired world cannot run again.
// `muster sim` keeps every policy's world until it compares them. Kept whole, a month
// of Philly's world is about 70 MB that every collection of the next replay marks
// again: muster's replay of October at load 2, after the two others, took 8.14 to
// 8.51 s with their worlds kept whole and 7.64 to 7.76 s with them retired, about 30 MB
// each (docs/benchmarks.md, "Retired worlds").
func (w *World) Retire() {
	w.sched, w.predictor, w.reserver, w.explainer = nil, nil, nil, nil
	w.pods, w.podJob, w.events, w.arrived, w.done = nil, nil, nil, nil, nil
	w.touched, w.accruing, w.unpredicted = nil, nil, nil
	for _, j := range w.jobs {
		j.pods, j.gen, j.requests = nil, nil, nil
	}
}
