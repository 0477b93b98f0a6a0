package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/deploy"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/sandbox"
)

func init() { startScheduler = runOnSandbox }

// serveFlags are the flags of `muster serve`.
type serveFlags struct {
	kubeconfig string
	config     string
	verbosity  int
}

// newServeCmd returns `muster serve`.
func newServeCmd() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Schedule gangs on a Kubernetes cluster",
		Long: `Runs muster's scheduler against a cluster: the one --kubeconfig (or KUBECONFIG) names,
or, with neither, the cluster muster runs in. Settings come from --config, a
muster.dev/v1alpha1 Configuration file; without it every default applies.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; defaults to $KUBECONFIG, then the in-cluster configuration")
	fs.StringVar(&f.config, "config", "", "Configuration file (muster.dev/v1alpha1, kind Configuration)")
	fs.IntVarP(&f.verbosity, "verbosity", "v", 0, "log verbosity")
	return cmd
}

// runServe runs the scheduler until SIGINT or SIGTERM.
func runServe(cmd *cobra.Command, f *serveFlags) error {
	cfg := musterv1alpha1.DefaultConfiguration()
	if f.config != "" {
		var err error
		if cfg, err = musterv1alpha1.LoadConfiguration(f.config); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
	}
	rc, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	applyClientConnection(rc, cfg.ClientConnection)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(f.verbosity), textlogger.Output(cmd.ErrOrStderr())))
	ctrl.SetLogger(log)
	return controller.Run(ctx, controller.Options{Config: rc, Configuration: cfg, Log: log})
}

// restConfig loads the kubeconfig at path, or $KUBECONFIG, or the in-cluster config.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig or KUBECONFIG, and not in a cluster: %w", err)
		}
		return rc, nil
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	return rc, nil
}

// applyClientConnection sets rc's rate limits and encoding from the Configuration's
// clientConnection (defaulted and valid). client-go's own defaults, 5 requests/s and a
// burst of 10, would hold muster to about 5 binds a second.
func applyClientConnection(rc *rest.Config, cc musterv1alpha1.ClientConnection) {
	rc.QPS, rc.Burst = cc.QPS, int(cc.Burst)
	rc.ContentType, rc.AcceptContentTypes = cc.ContentType, cc.AcceptContentTypes
}

// runOnSandbox runs the scheduler on the sandbox as it is deployed: a child
// `muster serve` process of this executable, with deploy/'s Configuration (metrics
// and health servers off, so that nothing else on the machine is in the way; the
// dashboard on loopback, whose URL it prints to out), as deploy/'s ServiceAccount
// with deploy/'s RBAC. Its log goes to a file named on out. It stops the child with
// SIGTERM when ctx ends.
func runOnSandbox(ctx context.Context, admin *rest.Config, out io.Writer) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding muster's executable: %w", err)
	}
	cfg, err := deploy.ParsedConfiguration()
	if err != nil {
		return err
	}
	cfg.MetricsAddr, cfg.HealthAddr = musterv1alpha1.DisabledAddr, musterv1alpha1.DisabledAddr
	if cfg.DashboardAddr, err = sandboxDashboardAddr(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "muster-serve")
	if err != nil {
		return fmt.Errorf("creating a directory for muster serve: %w", err)
	}
	defer os.RemoveAll(dir)
	logFile, err := os.CreateTemp("", "muster-serve-*.log")
	if err != nil {
		return fmt.Errorf("creating muster serve's log file: %w", err)
	}
	defer logFile.Close()
	m, err := sandbox.StartMuster(ctx, sandbox.MusterOptions{Binary: bin, Admin: admin, Configuration: cfg, Dir: dir, Log: logFile})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Scheduler: muster serve (pid %d, schedulerName: %s), as ServiceAccount %s/%s; log: %s\n",
		m.PID(), cfg.SchedulerName, deploy.ServiceAccount.Namespace, deploy.ServiceAccount.Name, logFile.Name())
	fmt.Fprintf(out, "Dashboard: http://%s/\n", cfg.DashboardAddr)
	select {
	case <-ctx.Done():
		return m.Stop(serveStopTimeout)
	case <-m.Done():
		return fmt.Errorf("muster serve (pid %d) exited: %v; see %s", m.PID(), m.Err(), logFile.Name())
	}
}

// sandboxDashboard is the sandbox's dashboard address while its port is free.
const sandboxDashboard = "127.0.0.1:8090"

// sandboxDashboardAddr returns sandboxDashboard, or a free loopback port when
// something else listens there (a second sandbox).
func sandboxDashboardAddr() (string, error) {
	ln, err := net.Listen("tcp", sandboxDashboard)
	if err != nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return "", fmt.Errorf("finding a port for the dashboard: %w", err)
		}
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// serveStopTimeout bounds the wait for the child muster serve to exit after SIGTERM.
const serveStopTimeout = 30 * time.Second
