package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/dashboard"
	"github.com/muster-sched/muster/internal/engine"
)

// StepObserver is told of every engine Step, on the scheduling loop's goroutine: it
// must return quickly. status reads a group's status from the engine and may be called
// only during Stepped. The dashboard's cost ledger is one.
type StepObserver interface {
	Stepped(now time.Time, out engine.Output, status func(key string) (engine.Status, bool))
}

// dashboardServer serves the dashboard on every replica (not only the leader), from
// the manager's cache: the informers the scheduler reads, so viewers add no load to the
// API server.
type dashboardServer struct {
	addr    string
	handler http.Handler
	log     logr.Logger
}

var _ manager.LeaderElectionRunnable = (*dashboardServer)(nil)

// NeedLeaderElection reports that every replica serves the dashboard.
func (d *dashboardServer) NeedLeaderElection() bool { return false }

// Start serves until ctx is done.
func (d *dashboardServer) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", d.addr)
	if err != nil {
		return fmt.Errorf("dashboardAddr %s: %w", d.addr, err)
	}
	srv := &http.Server{Handler: d.handler, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	d.log.Info("serving the dashboard", "url", url)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	err = srv.Serve(ln)
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serving the dashboard: %w", err)
}

// addDashboard adds the dashboard server to mgr when the configuration asks for one,
// and returns the ledger the scheduler must feed (nil without a dashboard).
func addDashboard(mgr manager.Manager, cfg *musterv1alpha1.Configuration, kube kubernetes.Interface, opts Options) (*dashboard.Ledger, error) {
	served := cfg.DashboardAddr != "" && cfg.DashboardAddr != musterv1alpha1.DisabledAddr
	if !served && !dashboardBehindVisibility(cfg) {
		return nil, nil
	}
	ledger := dashboard.NewLedger()
	store := &ledgerStore{ledger: ledger, kube: kube, namespace: cfg.Namespace, clock: opts.Clock, log: opts.Log.WithName("ledger")}
	if err := mgr.Add(store); err != nil {
		return nil, fmt.Errorf("adding the cost ledger's store: %w", err)
	}
	if !served {
		return ledger, nil
	}
	d, err := dashboard.New(dashboard.Options{Reader: mgr.GetCache(), Mapper: mgr.GetRESTMapper(), SchedulerNames: cfg.SchedulerNames(), Costs: ledger})
	if err != nil {
		return nil, err
	}
	srv := &dashboardServer{addr: cfg.DashboardAddr, handler: d, log: opts.Log.WithName("dashboard")}
	if err := mgr.Add(srv); err != nil {
		return nil, fmt.Errorf("adding the dashboard: %w", err)
	}
	return ledger, nil
}
