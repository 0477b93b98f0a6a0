package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/sim"
	"github.com/muster-sched/muster/internal/trace"
)

// simFlags are muster sim's options.
type simFlags struct {
	trace, cluster, policies, out, from, to string
	oneGPU                                  bool
	load, estimate                          float64
	seed                                    uint64
	limit, rounds                           int
	permitTimeout, permitBackoff            time.Duration
	readyAfter, horizon, stall, starve      time.Duration
	handicap, maxHandicap                   time.Duration
}

// newSimCmd replays a job trace through the pod-by-pod, permit-wait and muster policies in
// simulated time and reports, per policy, the table and plots of docs/benchmarks.md.
func newSimCmd() *cobra.Command {
	f := simFlags{}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Replay a job trace through scheduling policies in simulated time",
		Long: `sim replays the Philly trace on a simulated cluster, once per policy, through the same
core packages the scheduler uses: pod-by-pod (the default scheduler without gangs),
permit-wait (scheduler-plugins Coscheduling: members reserved one by one and held at a
permit barrier until the group is whole or the timeout), and muster (the engine). A job of
N GPUs becomes a gang of ceil(N/G) workers of min(N,G) GPUs on G-GPU nodes, or N workers of
one GPU with --workers-of-1gpu. It prints one row per policy and writes plots to --out.

Two more policies run muster with a Queue per virtual cluster (team) of the trace, whose
GPU quota is the team's share of the window's GPU time: muster-quota holds each team to its
quota; muster-cohort puts the queues in one cohort, so that teams borrow what others do not
use and take their own quota back when they need it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSim(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "Philly CSV to replay; empty: the copy shipped with muster (82,247 jobs)")
	fl.StringVar(&f.cluster, "cluster", "128x8gpu", "cluster as NODESxGPUSgpu")
	fl.StringVar(&f.policies, "policies", "pod-by-pod,permit-wait,muster", "comma-separated policies to compare")
	fl.StringVar(&f.out, "out", "./sim-out", "directory for the plots (PNG and SVG)")
	fl.StringVar(&f.from, "from", "", "replay jobs submitted at or after this time (2017-10-01 or 2017-10-01 12:00:00)")
	fl.StringVar(&f.to, "to", "", "replay jobs submitted before this time")
	fl.BoolVar(&f.oneGPU, "workers-of-1gpu", false, "make a job of N GPUs a gang of N one-GPU workers")
	fl.Float64Var(&f.load, "load", 1, "time-scale arrivals: 2 makes arrivals twice as dense")
	fl.Uint64Var(&f.seed, "seed", 1, "seed for the per-job time from bind to Ready")
	fl.IntVar(&f.limit, "limit", 0, "replay only the first N jobs of the window (0: all)")
	fl.DurationVar(&f.permitTimeout, "permit-timeout", 60*time.Second, "permit-wait: how long members wait at the permit barrier")
	fl.DurationVar(&f.permitBackoff, "permit-backoff", 10*time.Second, "permit-wait: how long a timed-out group waits before it is retried")
	fl.DurationVar(&f.readyAfter, "ready-after", 30*time.Second, "mean time from bind to Ready (image pull, init)")
	fl.DurationVar(&f.horizon, "horizon", 60*24*time.Hour, "simulated time to keep running after the last arrival")
	fl.Float64Var(&f.estimate, "estimate", 1, "run times the jobs declare: 1 declares the trace's durations, F > 1 each duration times a factor drawn in [1, 2F-1] (users over-declare), 0 declares none")
	fl.DurationVar(&f.starve, "starvation-threshold", 10*time.Minute, "muster: how long a group waits before nodes are reserved for it")
	fl.DurationVar(&f.handicap, "handicap-per-device-hour", musterv1alpha1.DefaultHandicapPerDeviceHour,
		"muster: how far back a group goes in the queue's order per GPU-hour it declares (Configuration sizeOrder); 0 orders by queue time alone")
	fl.DurationVar(&f.maxHandicap, "max-handicap", musterv1alpha1.DefaultMaxHandicap, "muster: the largest handicap (Configuration sizeOrder.maxHandicap)")
	fl.DurationVar(&f.stall, "deadlock-after", 10*time.Minute, "how long capacity must be held by incomplete groups, none becoming whole, to count as a deadlock episode")
	fl.IntVar(&f.rounds, "rounds", 1, "replay every policy this many times, the policies taking turns (each round starting with the next policy), and report each one's median wall and CPU time (a shared machine moves one run's wall time by a fifth); every round decides the same")
	return cmd
}

func runSim(cmd *cobra.Command, f simFlags) error {
	cl, err := sim.ParseCluster(f.cluster)
	if err != nil {
		return err
	}
	if f.load <= 0 {
		return fmt.Errorf("--load %v: want a positive factor", f.load)
	}
	if f.rounds < 1 {
		return fmt.Errorf("--rounds %d: want at least 1", f.rounds)
	}
	if f.estimate < 0 || (f.estimate > 0 && f.estimate < 1) {
		return fmt.Errorf("--estimate %v: want 0 (no declared run times) or a factor of at least 1", f.estimate)
	}
	policies, err := simPolicies(f)
	if err != nil {
		return err
	}
	jobs, err := loadWindow(f)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	cfg := sim.ReplayConfig{Cluster: cl, OneGPUWorkers: f.oneGPU, Load: f.load, ReadyAfter: f.readyAfter,
		Seed: f.seed, Horizon: f.horizon, StallThreshold: f.stall, Estimate: f.estimate}
	fmt.Fprintf(out, "replaying %d jobs of %s on %d nodes × %d GPUs (load %g, seed %d)\n", len(jobs), traceName(f.trace), cl.Nodes, cl.GPUsPerNode, f.load, f.seed)
	sums, worlds := make([]sim.Summary, len(policies)), make([]*sim.World, len(policies))
	walls, cpus := make([][]time.Duration, len(policies)), make([][]time.Duration, len(policies))
	for round := range f.rounds {
		// Each round starts one policy later than the one before, so that no policy
		// always replays on the heap the others left.
		for k := range policies {
			i := (k + round) % len(policies)
			p := policies[i]
			// Each replay starts on a collected heap: the garbage the one before left is
			// not collected, and charged, during this one's time.
			runtime.GC()
			start, cpu := time.Now(), processCPU()
			cfg.Teams = p.teams
			w := sim.Replay(jobs, p.sched(jobs, cl), cfg)
			s := sim.Summarise(p.name, w, cl.GPUs())
			s.Wall = time.Since(start)
			w.Retire()
			walls[i] = append(walls[i], s.Wall)
			cpus[i] = append(cpus[i], processCPU()-cpu)
			if round > 0 {
				if !sameOutcome(sums[i], s) {
					return fmt.Errorf("%s decided differently in round %d than in round 1", p.name, round+1)
				}
				continue
			}
			fmt.Fprintf(out, "%-12s %d of %d jobs finished, %.1f GPU-hours held by incomplete groups, %s wall, %s CPU\n",
				p.name, s.Finished, s.Jobs, s.HeldGPUHours, s.Wall.Round(time.Millisecond), cpus[i][0].Round(time.Millisecond))
			sums[i], worlds[i] = s, w
		}
	}
	if f.rounds > 1 {
		fmt.Fprintf(out, "\nwall time over %d rounds, the policies taking turns (the table shows the median):\n", f.rounds)
		for i := range sums {
			sums[i].Wall = median(walls[i])
			fmt.Fprintf(out, "%-12s median %s of %s\n", sums[i].Policy, sums[i].Wall.Round(time.Millisecond), roundedList(walls[i]))
		}
		fmt.Fprintf(out, "CPU time over the same rounds, all the process's threads (the garbage collector's too); others' load moves it less than wall time:\n")
		for i := range sums {
			fmt.Fprintf(out, "%-12s median %s of %s\n", sums[i].Policy, median(cpus[i]).Round(time.Millisecond), roundedList(cpus[i]))
		}
	}
	writeCostRatios(out, sums, cpus)
	fmt.Fprintln(out)
	sim.WriteTable(out, sums)
	fmt.Fprintln(out)
	sim.WriteDominance(out, sums)
	names := make([]string, len(sums))
	for i, s := range sums {
		names[i] = s.Policy
	}
	sim.WriteInstantStarts(out, names, worlds)
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("create --out directory: %w", err)
	}
	files, err := sim.WritePlots(f.out, sums, worlds, cl.GPUs())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nplots: %s\n", strings.Join(files, ", "))
	return nil
}

// writeCostRatios prints each policy's wall and CPU time (medians over the rounds) as a
// multiple of the first policy's: the cost of a policy's decisions, measured side by side
// in one run.
func writeCostRatios(out io.Writer, sums []sim.Summary, cpus [][]time.Duration) {
	if len(sums) < 2 || sums[0].Wall <= 0 {
		return
	}
	base := median(cpus[0])
	for i := 1; i < len(sums); i++ {
		fmt.Fprintf(out, "%s took %.2f× %s's wall time", sums[i].Policy, float64(sums[i].Wall)/float64(sums[0].Wall), sums[0].Policy)
		if base > 0 {
			fmt.Fprintf(out, " and %.2f× its CPU time", float64(median(cpus[i]))/float64(base))
		}
		fmt.Fprintln(out)
	}
}

// sameOutcome reports whether two replays of one policy decided the same: the same jobs
// finished, held and waited as long.
func sameOutcome(a, b sim.Summary) bool {
	return a.Finished == b.Finished && a.HeldGPUHours == b.HeldGPUHours && a.Evicted == b.Evicted &&
		slices.Equal(a.Delays, b.Delays) && slices.Equal(a.StartErrors, b.StartErrors)
}

// median returns the median of ds (the upper of the two middle ones for an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	return s[len(s)/2]
}

// roundedList renders ds to the millisecond, in the order they were measured.
func roundedList(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(parts, ", ")
}

type simPolicy struct {
	name string
	// teams puts each job in its virtual cluster's queue.
	teams bool
	sched func(jobs []trace.Job, cl sim.Cluster) sim.Scheduler
}

func simPolicies(f simFlags) ([]simPolicy, error) {
	var out []simPolicy
	for _, name := range strings.Split(f.policies, ",") {
		switch name = strings.TrimSpace(name); name {
		case "pod-by-pod":
			out = append(out, simPolicy{name: name, sched: func([]trace.Job, sim.Cluster) sim.Scheduler { return sim.NewPodByPod() }})
		case "permit-wait":
			out = append(out, simPolicy{name: name, sched: func([]trace.Job, sim.Cluster) sim.Scheduler {
				return sim.NewPermitWait(f.permitTimeout, f.permitBackoff)
			}})
		case "muster":
			out = append(out, simPolicy{name: name, sched: func([]trace.Job, sim.Cluster) sim.Scheduler {
				return sim.NewEngineOrdered(f.starve, engine.SizeOrder{PerDeviceHour: f.handicap, Max: f.maxHandicap})
			}})
		case "muster-quota", "muster-cohort":
			cohort := name == "muster-cohort"
			out = append(out, simPolicy{name: name, teams: true, sched: func(jobs []trace.Job, cl sim.Cluster) sim.Scheduler {
				return sim.NewTeamsEngine(sim.TeamQueues(jobs, cl, cohort))
			}})
		default:
			return nil, fmt.Errorf("--policies: unknown policy %q; want pod-by-pod, permit-wait, muster, muster-quota or muster-cohort", name)
		}
	}
	return out, nil
}

// loadWindow reads the trace and keeps the jobs submitted in [--from, --to), then the
// first --limit of them in submit order.
func loadWindow(f simFlags) ([]trace.Job, error) {
	load := func() ([]trace.Job, error) { return trace.LoadPhilly(f.trace) }
	if f.trace == "" {
		load = trace.Philly
	}
	all, err := load()
	if err != nil {
		return nil, err
	}
	from, err := parseWhen("--from", f.from)
	if err != nil {
		return nil, err
	}
	to, err := parseWhen("--to", f.to)
	if err != nil {
		return nil, err
	}
	var jobs []trace.Job
	for _, j := range all {
		if (!from.IsZero() && j.Submit.Before(from)) || (!to.IsZero() && !j.Submit.Before(to)) {
			continue
		}
		jobs = append(jobs, j)
	}
	if f.limit > 0 && len(jobs) > f.limit {
		slices.SortStableFunc(jobs, func(a, b trace.Job) int { return a.Submit.Compare(b.Submit) })
		jobs = jobs[:f.limit]
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("no job of %s was submitted in [%s, %s)", traceName(f.trace), orAny(f.from), orAny(f.to))
	}
	return jobs, nil
}

func parseWhen(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{trace.TimeLayout, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: want 2006-01-02 or 2006-01-02 15:04:05", flag, s)
}

// traceName names the --trace file in messages: the shipped copy when it is empty.
func traceName(path string) string {
	if path == "" {
		return trace.PhillyFile + " (shipped with muster)"
	}
	return path
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}
