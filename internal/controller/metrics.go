package controller

import (
	"sync"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/muster-sched/muster/internal/metrics"
)

// defaultMetrics registers muster's collectors once with controller-runtime's registry,
// which the manager serves on metricsAddr. Several managers in one process (tests, a
// restart) share them.
var defaultMetrics = sync.OnceValue(func() *metrics.Metrics { return metrics.New(ctrlmetrics.Registry) })
