package main

import (
	"context"

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
// no metrics or health servers.
func runOnSandbox(ctx context.Context, rc *rest.Config) error {
	cfg := musterv1alpha1.DefaultConfiguration()
	disabled := false
	cfg.LeaderElection.Enabled = &disabled
	cfg.MetricsAddr, cfg.HealthAddr = musterv1alpha1.DisabledAddr, musterv1alpha1.DisabledAddr
	// The sandbox prints its own summary; the scheduler's logs would drown it.
	ctrl.SetLogger(logr.Discard())
	rc = rest.CopyConfig(rc)
	serve.ApplyClientConnection(rc, cfg.ClientConnection)
	return controller.Run(ctx, controller.Options{Config: rc, Configuration: cfg})
}
