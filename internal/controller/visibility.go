package controller

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/visibility"
)

// addVisibility adds the visibility API's server to mgr when the configuration asks
// for one. Every replica serves it, from the manager's cache.
func addVisibility(mgr manager.Manager, cfg *musterv1alpha1.Configuration, opts Options) error {
	v := cfg.Visibility
	if v.BindAddress == "" || v.BindAddress == musterv1alpha1.DisabledAddr {
		return nil
	}
	srv, err := visibility.New(visibility.Options{
		BindAddress: v.BindAddress, CertDir: v.CertDir,
		ServiceName: v.ServiceName, ServiceNamespace: cfg.Namespace,
		Kubeconfig: opts.Kubeconfig, Reader: mgr.GetCache(), SchedulerName: cfg.SchedulerName,
		Clock: opts.Clock, Log: opts.Log.WithName("visibility"),
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("adding the visibility API: %w", err)
	}
	return nil
}
