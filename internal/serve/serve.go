// Package serve is the `muster serve` command, shared by the muster and muster-scheduler
// binaries: it loads the Configuration, builds the API server client with its
// clientConnection settings, and runs the scheduler until SIGINT or SIGTERM.
package serve

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/timeshift"
)

// flags are the flags of `muster serve`.
type flags struct {
	kubeconfig string
	config     string
	verbosity  int
	// testClock, if set, is the loopback address of the test clock's endpoint (see
	// package timeshift): a hidden flag for muster's own e2e and observe suites.
	testClock string
}

// NewCommand returns `muster serve`.
func NewCommand() *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Schedule gangs on a Kubernetes cluster",
		Long: `Runs muster's scheduler against a cluster: the one --kubeconfig (or KUBECONFIG) names,
or, with neither, the cluster muster runs in. Settings come from --config, a
muster.dev/v1alpha1 Configuration file; without it every default applies.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; defaults to $KUBECONFIG, then the in-cluster configuration")
	fs.StringVar(&f.config, "config", "", "Configuration file (muster.dev/v1alpha1, kind Configuration)")
	fs.IntVarP(&f.verbosity, "verbosity", "v", 0, "log verbosity")
	fs.StringVar(&f.testClock, testClockFlag, "", "FOR MUSTER'S OWN TESTS ONLY: run the scheduling timers on a clock that a client on this host moves forward at this loopback address")
	if err := fs.MarkHidden(testClockFlag); err != nil {
		panic(err) // the flag was just defined
	}
	return cmd
}

// run runs the scheduler until SIGINT or SIGTERM.
func run(cmd *cobra.Command, f *flags) error {
	if f.testClock != "" {
		if err := timeshift.CheckLoopback(f.testClock); err != nil {
			return fmt.Errorf("--%s: %w", testClockFlag, err)
		}
	}
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
	ApplyClientConnection(rc, cfg.ClientConnection)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(f.verbosity), textlogger.Output(cmd.ErrOrStderr())))
	ctrl.SetLogger(log)
	opts := controller.Options{Config: rc, Configuration: cfg, Log: log, Kubeconfig: kubeconfigFile(f.kubeconfig)}
	if f.testClock != "" {
		c, err := startTestClock(ctx, f.testClock, log)
		if err != nil {
			return err
		}
		opts.Clock = c
	}
	return controller.Run(ctx, opts)
}

// testClockFlag is the hidden flag that turns the test clock on.
const testClockFlag = "test-clock-addr"

// startTestClock serves a test clock (package timeshift) on addr, which must be a
// loopback address, until ctx ends, and says so loudly in the log.
func startTestClock(ctx context.Context, addr string, log logr.Logger) (*timeshift.Clock, error) {
	ln, err := timeshift.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", testClockFlag, err)
	}
	c := timeshift.New()
	log.Info("WARNING: TEST CLOCK ON. muster's scheduling timers (start-timeout, backoff, recovery) run on a clock "+
		"that any process on this host can move forward; this is for muster's own tests and never for a real cluster",
		"flag", "--"+testClockFlag, "address", ln.Addr().String())
	go func() {
		if err := timeshift.Serve(ctx, ln, c); err != nil {
			log.Error(err, "the test clock's endpoint stopped")
		}
	}()
	return c, nil
}

// kubeconfigFile is the kubeconfig file restConfig(path) reads: path, or $KUBECONFIG
// when it names one file; empty for the in-cluster configuration.
func kubeconfigFile(path string) string {
	if path != "" {
		return path
	}
	env := os.Getenv("KUBECONFIG")
	if strings.Contains(env, string(os.PathListSeparator)) {
		return ""
	}
	return env
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

// ApplyClientConnection sets rc's rate limits and encoding from the Configuration's
// clientConnection (defaulted and valid). client-go's own defaults, 5 requests/s and a
// burst of 10, would hold muster to about 5 binds a second.
func ApplyClientConnection(rc *rest.Config, cc musterv1alpha1.ClientConnection) {
	rc.QPS, rc.Burst = cc.QPS, int(cc.Burst)
	rc.ContentType, rc.AcceptContentTypes = cc.ContentType, cc.AcceptContentTypes
}
