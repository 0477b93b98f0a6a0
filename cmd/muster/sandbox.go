package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
)

// startScheduler runs muster's scheduler against the cluster that cfg reaches with
// full access until ctx is done, saying how on out. It is nil until the scheduler is
// wired in; the sandbox command then runs the cluster without a scheduler and says so.
var startScheduler func(ctx context.Context, cfg *rest.Config, out io.Writer) error

// sandboxFlags are the flags of `muster sandbox`.
type sandboxFlags struct {
	preset        string
	clusterFile   string
	paiTrace      string
	paiScale      float64
	draNodes      int
	draGPUs       int
	draCliques    int
	kubeconfigOut string
	nodesOnly     bool
	demo          bool
	verbose       bool
	timing        kubelet.Timing
}

// newSandboxCmd returns `muster sandbox`.
func newSandboxCmd() *cobra.Command {
	// The Kubernetes packages the sandbox embeds register flags such as --version on
	// pflag.CommandLine, which cobra merges into every command; muster reads none of
	// them, so they would only be advertised and ignored.
	pflag.CommandLine = pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)
	f := &sandboxFlags{timing: kubelet.DefaultTiming()}
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run an in-process Kubernetes control plane with simulated GPU nodes, and schedule on it",
		Long: `Starts etcd and kube-apiserver in this process, installs muster's CRDs, creates the
nodes of a simulated cluster (a preset or a cluster file) with a simulated kubelet, writes
a kubeconfig for kubectl, and runs until interrupted (Ctrl-C).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandbox(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.preset, "preset", sandbox.PresetSeed, fmt.Sprintf("simulated cluster preset, one of %v", sandbox.Presets()))
	fs.StringVar(&f.clusterFile, "cluster", "", "YAML file of node pools; overrides --preset")
	fs.StringVar(&f.paiTrace, "pai-trace", "", "PAI machine trace (pai-machine-spec.csv) for --preset pai; empty: the copy shipped with muster")
	fs.Float64Var(&f.paiScale, "pai-scale", 0.05, "fraction of the PAI machines to create for --preset pai (1 = 1,896 nodes)")
	fs.IntVar(&f.draNodes, "dra-nodes", sandbox.DefaultDRANodes, "nodes of --preset dra (GPUs as DRA devices of driver gpu.nvidia.com only)")
	fs.IntVar(&f.draGPUs, "dra-gpus", sandbox.DefaultDRAGPUs, "DRA GPUs per node of --preset dra (at most 128)")
	fs.IntVar(&f.draCliques, "dra-cliques", sandbox.DefaultDRACliques, "NVLink domains (clique-a, clique-b, …) the nodes of --preset dra are split into")
	fs.StringVar(&f.kubeconfigOut, "kubeconfig-out", "./muster-sandbox.kubeconfig", "where to write the kubeconfig of the sandbox")
	fs.BoolVar(&f.nodesOnly, "nodes-only", false, "do not run muster's scheduler, so another scheduler can be used")
	fs.BoolVar(&f.demo, "demo", false, "submit the two-jobs example as real PodGroups and pods, print a live timeline, and exit 0 only if it is gang scheduled (needs the seed preset)")
	fs.BoolVar(&f.verbose, "verbose", false, "print the control plane's logs to stderr")
	fs.DurationVar(&f.timing.PullDelay, "pull-delay", f.timing.PullDelay, "simulated image pull time of each pod")
	fs.DurationVar(&f.timing.ReadyDelay, "ready-delay", f.timing.ReadyDelay, "time from container start to Ready (annotation sandbox.muster.dev/ready-after overrides)")
	fs.DurationVar(&f.timing.RunFor, "run-for", f.timing.RunFor, "run time of each pod before it succeeds, 0 = until deleted (annotation sandbox.muster.dev/run-for overrides)")
	return cmd
}

// defaultToSandbox makes the root command run the sandbox when given no
// subcommand, with the sandbox's flags.
func defaultToSandbox(root, sandboxCmd *cobra.Command) {
	root.Args = cobra.NoArgs
	root.RunE = sandboxCmd.RunE
	root.Flags().AddFlagSet(sandboxCmd.Flags())
}

// runSandbox starts the sandbox, prints how to reach it, and runs until SIGINT or
// SIGTERM.
func runSandbox(cmd *cobra.Command, f *sandboxFlags) error {
	began := time.Now()
	cluster, source, err := f.cluster()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var log io.Writer
	if f.verbose {
		log = cmd.ErrOrStderr()
	}
	sb, err := sandbox.Start(ctx, sandbox.Options{Cluster: cluster, Kubelet: kubelet.Config{Timing: f.timing}, Log: log})
	if err != nil {
		return fmt.Errorf("starting the sandbox: %w", err)
	}
	defer sb.Stop()
	path, err := filepath.Abs(f.kubeconfigOut)
	if err != nil {
		return fmt.Errorf("--kubeconfig-out %q: %w", f.kubeconfigOut, err)
	}
	if err := sb.WriteKubeconfig(path); err != nil {
		return err
	}
	// The kubeconfig names this sandbox's address and credentials, which die with it;
	// left behind, it would send `muster explain` (which falls back to it) to a dead
	// server.
	defer os.Remove(path)
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "muster sandbox: %d nodes (%s), API server %s, ready in %.1fs\n",
		cluster.NodeCount(), source, sb.RESTConfig().Host, time.Since(began).Seconds())
	fmt.Fprintf(out, "Use it with:\n  kubectl --kubeconfig %s get nodes\n", path)
	schedCtx, stopScheduler := context.WithCancel(ctx)
	defer stopScheduler()
	schedErr := runScheduler(schedCtx, out, sb.RESTConfig(), f.nodesOnly)
	if f.demo {
		err := runDemo(ctx, out, sb.RESTConfig())
		if !f.nodesOnly && startScheduler != nil {
			stopScheduler()
			<-schedErr // the scheduler lets go of the API server before it stops
		}
		return err
	}
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	select {
	case <-ctx.Done():
	case err := <-schedErr:
		if err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
		<-ctx.Done()
	}
	fmt.Fprintln(out, "Stopping the sandbox.")
	return sb.Stop()
}

// runScheduler starts muster's scheduler in the background unless nodesOnly, and
// returns a channel that receives its result.
func runScheduler(ctx context.Context, out io.Writer, cfg *rest.Config, nodesOnly bool) <-chan error {
	done := make(chan error, 1)
	switch {
	case nodesOnly:
		fmt.Fprintln(out, "Scheduler: none (--nodes-only); run another scheduler against the kubeconfig.")
	case startScheduler == nil:
		fmt.Fprintln(out, "Scheduler: muster's scheduler is not wired into the sandbox yet; pods stay Pending unless another scheduler binds them.")
	default:
		go func() { done <- startScheduler(ctx, cfg, out) }()
	}
	return done
}

// cluster is the simulated cluster the flags ask for, and a description of it.
func (f *sandboxFlags) cluster() (sandbox.Cluster, string, error) {
	if f.clusterFile != "" {
		c, err := sandbox.LoadCluster(f.clusterFile)
		if err != nil {
			return sandbox.Cluster{}, "", fmt.Errorf("--cluster: %w", err)
		}
		return c, "cluster file " + f.clusterFile, nil
	}
	flag := "--preset"
	if f.preset == sandbox.PresetPAI {
		if !(f.paiScale > 0) {
			return sandbox.Cluster{}, "", fmt.Errorf("--pai-scale: expected a number greater than zero, found %v", f.paiScale)
		}
		flag = "--pai-trace" // with a valid scale, only the trace can be wrong
	}
	if f.preset == sandbox.PresetDRA {
		for _, k := range []struct {
			name  string
			value int
		}{{"--dra-nodes", f.draNodes}, {"--dra-gpus", f.draGPUs}, {"--dra-cliques", f.draCliques}} {
			if k.value < 1 {
				return sandbox.Cluster{}, "", fmt.Errorf("%s: expected at least 1, found %d", k.name, k.value)
			}
		}
		flag = "--dra-nodes, --dra-gpus, --dra-cliques"
	}
	c, err := sandbox.Preset(f.preset, sandbox.PresetOptions{
		PAITrace: f.paiTrace, PAIScale: f.paiScale, DRANodes: f.draNodes, DRAGPUs: f.draGPUs, DRACliques: f.draCliques,
	})
	if err != nil {
		return sandbox.Cluster{}, "", fmt.Errorf("%s: %w", flag, err)
	}
	return c, "preset " + f.preset, nil
}
