package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/deploy"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/serve"
)

func init() { startScheduler = runOnSandbox }

// newServeCmd returns `muster serve`, the same command as muster-scheduler's.
func newServeCmd() *cobra.Command { return serve.NewCommand() }

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
	if cfg.Visibility.BindAddress, err = sandbox.FreeLoopbackAddr(); err != nil {
		return err
	}
	cfg.Visibility.CertDir = dir
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
		m.PID(), strings.Join(cfg.SchedulerNames(), ", "), deploy.ServiceAccount.Namespace, deploy.ServiceAccount.Name, logFile.Name())
	fmt.Fprintf(out, "Dashboard: http://%s/\n", cfg.DashboardAddr)
	if err := sandbox.RegisterVisibility(ctx, admin, cfg, m); err != nil {
		fmt.Fprintf(out, "Visibility API: not registered (tenants' explain shows the recorded diagnosis): %v\n", err)
	} else {
		fmt.Fprintf(out, "Visibility API: %s/%s, served by muster serve at %s\n", explain.VisibilityGroup, explain.VisibilityVersion, cfg.Visibility.BindAddress)
	}
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
		addr, err := sandbox.FreeLoopbackAddr()
		if err != nil {
			return "", fmt.Errorf("finding a port for the dashboard: %w", err)
		}
		return addr, nil
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// serveStopTimeout bounds the wait for the child muster serve to exit after SIGTERM.
const serveStopTimeout = 30 * time.Second
