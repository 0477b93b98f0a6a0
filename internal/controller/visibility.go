package controller

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/dashboard"
	"github.com/muster-sched/muster/internal/visibility"
)

// addVisibility adds the visibility API's server to mgr when the configuration asks
// for one, with the dashboard behind it when asked too (ledger feeds its cost page).
// Every replica serves it, from the manager's cache.
func addVisibility(mgr manager.Manager, cfg *musterv1alpha1.Configuration, opts Options, ledger *dashboard.Ledger) error {
	v := cfg.Visibility
	if !visibilityServed(cfg) {
		return nil
	}
	vopts := visibility.Options{
		BindAddress: v.BindAddress, CertDir: v.CertDir,
		ServiceName: v.ServiceName, ServiceNamespace: cfg.Namespace,
		Kubeconfig: opts.Kubeconfig, Reader: mgr.GetCache(), Mapper: mgr.GetRESTMapper(), SchedulerNames: cfg.SchedulerNames(),
		Clock: opts.Clock, Log: opts.Log.WithName("visibility"),
	}
	if dashboardBehindVisibility(cfg) {
		d, err := dashboard.New(dashboard.Options{Reader: mgr.GetCache(), Mapper: mgr.GetRESTMapper(), SchedulerNames: cfg.SchedulerNames(), Costs: ledger})
		if err != nil {
			return err
		}
		vopts.Dashboard = d
	}
	srv, err := visibility.New(vopts)
	if err != nil {
		return err
	}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("adding the visibility API: %w", err)
	}
	return nil
}

// visibilityServed reports whether the configuration asks for the visibility API.
func visibilityServed(cfg *musterv1alpha1.Configuration) bool {
	a := cfg.Visibility.BindAddress
	return a != "" && a != musterv1alpha1.DisabledAddr
}

// dashboardBehindVisibility reports whether the dashboard is served through the
// visibility API, each request authorized by the API server's rules.
func dashboardBehindVisibility(cfg *musterv1alpha1.Configuration) bool {
	return visibilityServed(cfg) && cfg.Visibility.Dashboard
}
