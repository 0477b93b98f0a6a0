package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/serve"
)

func init() { startScheduler = runOnSandbox }

// newServeCmd returns `muster serve`, the same command as muster-scheduler's.
func newServeCmd() *cobra.Command { return serve.NewCommand() }

// runOnSandbox runs the scheduler on the sandbox: one replica, no leader election,
// no metrics or health servers, and the dashboard on loopback, whose URL it prints to
// out.
func runOnSandbox(ctx context.Context, rc *rest.Config, out io.Writer) error {
	cfg := musterv1alpha1.DefaultConfiguration()
	disabled := false
	cfg.LeaderElection.Enabled = &disabled
	cfg.MetricsAddr, cfg.HealthAddr = musterv1alpha1.DisabledAddr, musterv1alpha1.DisabledAddr
	cfg.DashboardAddr = sandboxDashboardAddr()
	// The sandbox prints its own summary; the scheduler's logs would drown it.
	ctrl.SetLogger(logr.Discard())
	rc = rest.CopyConfig(rc)
	serve.ApplyClientConnection(rc, cfg.ClientConnection)
	return controller.Run(ctx, controller.Options{Config: rc, Configuration: cfg,
		DashboardListening: func(url string) { fmt.Fprintf(out, "Dashboard: %s\n", url) }})
}

// sandboxDashboard is the sandbox's dashboard address while its port is free.
const sandboxDashboard = "127.0.0.1:8090"

// sandboxDashboardAddr returns sandboxDashboard, or any free loopback port when
// something else listens there (a second sandbox).
func sandboxDashboardAddr() string {
	ln, err := net.Listen("tcp", sandboxDashboard)
	if err != nil {
		return "127.0.0.1:0"
	}
	ln.Close()
	return sandboxDashboard
}
