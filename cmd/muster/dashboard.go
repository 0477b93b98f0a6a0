package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/dashboard"
)

// dashboardFlags are the flags of `muster dashboard`.
type dashboardFlags struct {
	kubeconfig, addr, namespace string
	schedulerNames              []string
}

// newDashboardCmd returns `muster dashboard`.
func newDashboardCmd() *cobra.Command {
	f := &dashboardFlags{}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve muster's read-only web dashboard of a cluster, on this machine",
		Long: `Watches a cluster (the one --kubeconfig, KUBECONFIG or ~/.kube/config names) with
informers of its own, as muster does, and serves the dashboard on a loopback address:
the cluster's devices coloured by what holds them, the queues, each group's timeline and
debugging walk, and the cost of the last day from the ledger muster keeps in its
namespace (ConfigMap muster-cost-ledger, written by muster serve when its
dashboardAddr is set).`,
		Example: `  muster dashboard --kubeconfig ~/.kube/config
  muster dashboard --addr 127.0.0.1:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDashboard(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8090", "loopback host:port to serve on")
	fs.StringSliceVar(&f.schedulerNames, "scheduler-name", []string{"muster"},
		"muster's schedulerNames in the cluster: its Configuration's schedulerName, then its additionalSchedulerNames (repeat the flag or separate them with commas)")
	fs.StringVar(&f.namespace, "namespace", "muster-system", "muster's namespace, where it keeps its cost ledger")
	return cmd
}

// runDashboard serves the dashboard until SIGINT or SIGTERM.
func runDashboard(cmd *cobra.Command, f *dashboardFlags) error {
	if err := requireLoopback(f.addr); err != nil {
		return err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	scheme, err := controller.Scheme()
	if err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(rc)
	if err != nil {
		return fmt.Errorf("creating an HTTP client: %w", err)
	}
	// The cache and the explain walk resolve kinds with one RESTMapper.
	mapper, err := apiutil.NewDynamicRESTMapper(rc, httpClient)
	if err != nil {
		return fmt.Errorf("creating a RESTMapper: %w", err)
	}
	c, err := cache.New(rc, cache.Options{Scheme: scheme, HTTPClient: httpClient, Mapper: mapper,
		DefaultTransform: cache.TransformStripManagedFields(),
		// Of the ConfigMaps, only the ledger is watched.
		ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{f.namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", dashboard.LedgerConfigMap),
		}}})
	if err != nil {
		return fmt.Errorf("creating the cache: %w", err)
	}
	d, err := dashboard.New(dashboard.Options{Reader: c, Mapper: mapper, SchedulerNames: f.schedulerNames,
		Costs: dashboard.StoredCosts{Reader: c, Namespace: f.namespace}})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- c.Start(ctx) }()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", f.addr, err)
	}
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.OutOrStdout(), "Dashboard of %s: http://%s/ (Ctrl-C to stop)\n", rc.Host, ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the dashboard: %w", err)
	}
	return <-cacheDone
}

// requireLoopback refuses an address off this machine: the dashboard does not
// authenticate its viewers, and here it reads with the user's own credentials.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: expected host:port: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--addr %q: expected a loopback host (127.0.0.1, [::1] or localhost): the dashboard does not authenticate its viewers", addr)
	}
	return nil
}
