// Package serve is the `muster serve` command, shared by the muster and muster-scheduler
// binaries: it loads the Configuration, builds the API server client with its
// clientConnection settings, and runs the scheduler until SIGINT or SIGTERM.
package serve

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
)

// flags are the flags of `muster serve`.
type flags struct {
	kubeconfig string
	config     string
	verbosity  int
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
	return cmd
}

// run runs the scheduler until SIGINT or SIGTERM.
func run(cmd *cobra.Command, f *flags) error {
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
	return controller.Run(ctx, controller.Options{Config: rc, Configuration: cfg, Log: log, Kubeconfig: kubeconfigFile(f.kubeconfig)})
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
