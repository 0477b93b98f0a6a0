package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/muster-sched/muster/internal/bench"
)

// benchFlags are the flags of `muster bench`.
type benchFlags struct {
	scenarios []string
	runners   []string
	out       string
	qps       float32
	burst     int
	rounds    int
	window    time.Duration
	timeout   time.Duration
	drain     time.Duration
	logFile   string
	cpuProf   string
	soak      soakFlags
	deep      bench.DeepQueue
	draNodes  int
	draGangs  int
}

// soakFlags are the flags of the soak scenario.
type soakFlags struct {
	duration, sample time.Duration
	nodes, live      int
	csv              string
}

// newBenchCmd returns `muster bench`.
func newBenchCmd() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run muster side by side with the upstream kube-scheduler on the sandbox",
		Long: `Runs the same pods on the same simulated nodes, one scheduler at a time:
kube-scheduler v1.37 with its default profile on plain pods, at its default client
settings (kube-scheduler-defaults) and with --qps/--burst (kube-scheduler-qps);
kube-scheduler with GenericWorkload gang scheduling on native PodGroups
(kube-scheduler-gang, --qps); muster as deployed, a muster serve process of this
executable with deploy/'s Configuration as deploy/'s ServiceAccount, on the same
PodGroups (muster-defaults); and a ceiling that binds to precomputed nodes without
deciding. Prints a table with each figure and muster's ratios to the others.

Scenarios: seed (8 one-GPU nodes, two interleaved jobs of 8, observed 60 s),
throughput (1,000 nodes × 8 GPUs, 500 gangs of 8), big-gang (5,000 nodes, one gang of
1,000), anti-affinity (throughput with one-per-node anti-affinity in each gang, run only
when named), deep-queue (run only when named: --deep-nodes nodes × 8 GPUs each filled by
a holder pod the bench binds, then --deep-groups single-pod groups and --deep-gangs gangs
of 8 one-GPU pods queued behind them; after 10 s the bench deletes 10 holders a second
in node order, the same sequence for every runner, and measures admissions per second
from the first release to the last admission and, per released node, the time from its
holder's deletion to the first admission of a group with a pod on it, p50 and p99; the
run ends when every queued pod is bound, the freed GPUs are all bound, or 30 s pass
without a bind after the last release); dra (run only when named: --dra-nodes nodes of 8
GPUs as DRA devices of driver gpu.nvidia.com, --dra-gangs gangs of 8 pods whose GPU is a
one-device ResourceClaim from a ResourceClaimTemplate; every claim must be allocated and
reserved when the last pod is bound); ceiling adds the ceiling runner to throughput and big-gang. soak, run only
when named (--scenarios soak), is 1,000 nodes × 8 GPUs and muster-defaults alone:
gangs of 8, 4 and 16 pods created, bound, deleted with their groups and replaced for
--soak-duration, muster's RSS and heap sampled every --soak-sample, with the
least-squares slope after the first fifth (warm-up).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&f.scenarios, "scenarios", bench.DefaultScenarios(), "scenarios to run: "+strings.Join(bench.Scenarios(), ", "))
	fs.StringSliceVar(&f.runners, "runners", nil, "restrict the runners to these: "+strings.Join(bench.Runners(), ", ")+" (default all)")
	fs.StringVar(&f.out, "out", "", "also write the table as Markdown to this file")
	fs.Float32Var(&f.qps, "qps", 5000, "client QPS of the runners with QPS raised (kube-scheduler's --kube-api-qps)")
	fs.IntVar(&f.burst, "burst", 10000, "client burst of the runners with QPS raised (kube-scheduler's --kube-api-burst)")
	fs.IntVar(&f.rounds, "rounds", 1, "run each scenario's runners this many times, one after the other in each round; the table shows medians and the notes every round")
	fs.DurationVar(&f.window, "seed-window", 60*time.Second, "how long the seed scenario is observed")
	fs.DurationVar(&f.timeout, "timeout", 15*time.Minute, "how long a run may take to bind all its pods")
	fs.DurationVar(&f.drain, "drain", 10*time.Second, "how long throughput and big-gang runs go on after the last bind, so that the writes made after binding (statuses, events) are counted")
	fs.StringVar(&f.cpuProf, "cpuprofile-dir", "", "write a CPU profile of each run (control plane and scheduler, from the first create to the last bind) to this directory; the scheduler's samples carry the label runner=<name>")
	fs.DurationVar(&f.soak.duration, "soak-duration", 10*time.Minute, "how long the soak creates and deletes gangs")
	fs.DurationVar(&f.soak.sample, "soak-sample", 10*time.Second, "how often the soak samples muster's RSS and heap")
	fs.IntVar(&f.soak.nodes, "soak-nodes", 1000, "the soak's simulated nodes, of 8 GPUs each")
	fs.IntVar(&f.soak.live, "soak-live", 32, "how many gangs the soak keeps in flight")
	fs.StringVar(&f.soak.csv, "soak-csv", "", "also write the soak's samples as CSV to this file")
	fs.IntVar(&f.deep.Nodes, "deep-nodes", bench.DefaultDeepNodes, "the deep-queue scenario's nodes, of 8 GPUs each")
	fs.IntVar(&f.deep.Groups, "deep-groups", bench.DefaultDeepGroups, "the deep-queue scenario's single-pod groups (one GPU each); -1 for none")
	fs.IntVar(&f.deep.Gangs, "deep-gangs", bench.DefaultDeepGangs, "the deep-queue scenario's gangs of 8 one-GPU pods; -1 for none")
	fs.IntVar(&f.draNodes, "dra-nodes", bench.DefaultDRANodes, "the dra scenario's nodes, of 8 DRA GPUs each")
	fs.IntVar(&f.draGangs, "dra-gangs", bench.DefaultDRAGangs, "the dra scenario's gangs of 8 pods with a one-device claim each")
	fs.StringVar(&f.logFile, "log", "", "write the control plane's and schedulers' logs to this file (default: discard)")
	return cmd
}

// runBench runs the bench until it ends or SIGINT/SIGTERM, and prints the table.
func runBench(cmd *cobra.Command, f *benchFlags) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var log io.Writer = io.Discard
	if f.logFile != "" {
		lf, err := os.Create(f.logFile)
		if err != nil {
			return fmt.Errorf("--log: %w", err)
		}
		defer lf.Close()
		log = lf
	}
	ctrl.SetLogger(logr.Discard())
	if f.cpuProf != "" {
		if err := os.MkdirAll(f.cpuProf, 0o755); err != nil {
			return fmt.Errorf("--cpuprofile-dir: %w", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding muster's executable, which the muster runners run as muster serve: %w", err)
	}
	rep, err := bench.Run(ctx, bench.Options{
		MusterBinary: self,
		Scenarios:    f.scenarios, Runners: f.runners, QPS: f.qps, Burst: f.burst,
		Rounds: f.rounds, Window: f.window, Timeout: f.timeout, Drain: f.drain, Log: log, Progress: cmd.ErrOrStderr(),
		ProfileDir:   f.cpuProf,
		SoakDuration: f.soak.duration, SoakSample: f.soak.sample, SoakNodes: f.soak.nodes, SoakLive: f.soak.live,
		DeepNodes: f.deep.Nodes, DeepGroups: f.deep.Groups, DeepGangs: f.deep.Gangs,
		DRANodes: f.draNodes, DRAGangs: f.draGangs,
	})
	if rep != nil && (len(rep.Results) > 0 || rep.Soak != nil) {
		if werr := rep.WriteText(cmd.OutOrStdout()); werr != nil {
			return werr
		}
		if f.out != "" {
			if werr := writeMarkdown(f.out, rep); werr != nil {
				return werr
			}
		}
		if f.soak.csv != "" && rep.Soak != nil {
			if werr := writeSoakCSV(f.soak.csv, rep.Soak); werr != nil {
				return werr
			}
		}
	}
	return err
}

// writeSoakCSV writes the soak's samples to path.
func writeSoakCSV(path string, soak *bench.SoakResult) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--soak-csv: %w", err)
	}
	if err := soak.WriteCSV(out); err != nil {
		out.Close()
		return fmt.Errorf("--soak-csv %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("--soak-csv %s: %w", path, err)
	}
	return nil
}

// writeMarkdown writes the report's table to path.
func writeMarkdown(path string, rep *bench.Report) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := rep.WriteMarkdown(out); err != nil {
		out.Close()
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return nil
}
