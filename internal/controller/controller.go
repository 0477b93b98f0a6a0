package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/metrics"
)

// Options configures a controller.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	// Configuration is muster's configuration, complete and valid (see
	// musterv1alpha1.LoadConfiguration); nil means every default.
	Configuration *musterv1alpha1.Configuration
	// Clock is the engine's clock; nil means the real clock.
	Clock clock.WithTicker
	// Log receives the controller's log lines; the zero value discards them.
	Log logr.Logger
	// Metrics receives the scheduler's measurements; nil means muster's collectors in
	// controller-runtime's registry, served on metricsAddr.
	Metrics *metrics.Metrics
	// Kubeconfig is the kubeconfig file Config came from, if any: the visibility API
	// reaches the API server with it for TokenReview and SubjectAccessReview; empty
	// means the in-cluster configuration.
	Kubeconfig string
}

// Scheme returns a scheme with every type the controller reads or writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, spv1alpha1.AddToScheme, volcanov1beta1.AddToScheme,
		musterv1alpha1.AddToScheme, schedulingv1beta1.AddToScheme, schedulingv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return s, nil
}

// Run runs muster's scheduler until ctx is done: a manager that serves metrics and
// health probes, elects a leader, and, on the leader, the scheduling loop. It returns
// nil when ctx ends, or the error that stopped it.
func Run(ctx context.Context, opts Options) error {
	mgr, err := NewManager(opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// NewManager returns a manager with the scheduler added as a leader-elected runnable.
func NewManager(opts Options) (manager.Manager, error) {
	if opts.Config == nil {
		return nil, errors.New("controller: expected a rest.Config, found nil")
	}
	cfg := opts.Configuration
	if cfg == nil {
		cfg = musterv1alpha1.DefaultConfiguration()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	le := cfg.LeaderElection
	mopts := manager.Options{
		Scheme:                  scheme,
		Logger:                  opts.Log,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:  cfg.HealthAddr,
		PprofBindAddress:        cfg.PprofAddr,
		LeaderElection:          *le.Enabled,
		LeaderElectionID:        le.LeaseName,
		LeaderElectionNamespace: le.LeaseNamespace,
		LeaseDuration:           &le.LeaseDuration.Duration,
		RenewDeadline:           &le.RenewDeadline.Duration,
		RetryPeriod:             &le.RetryPeriod.Duration,
		// A replica that stops (SIGTERM, a rolling update) gives the Lease up at once
		// instead of leaving the others to wait out leaseDuration with a group maybe
		// half-bound: the next replica leads within a retryPeriod.
		LeaderElectionReleaseOnCancel: true,
		// muster never reads managedFields; dropping them from the cache, as
		// kube-scheduler does, saves memory and time per watched pod. Reads return the
		// cached objects themselves, as kube-scheduler's listers do: muster never
		// modifies an object it read (it copies one before changing it, as evict.go's
		// record does), and copying every pod it read took 6% of its CPU in a bench run.
		Cache: cache.Options{
			DefaultTransform:             cache.TransformStripManagedFields(),
			DefaultUnsafeDisableDeepCopy: ptr.To(true),
		},
	}
	// The manager's clients choose the encoding per type: protobuf for built-in types
	// (pods and nodes, the bulk of what muster watches), JSON for custom resources,
	// which have no protobuf encoding. A content type set on the config would apply
	// to every type, so it is cleared.
	rc := rest.CopyConfig(opts.Config)
	rc.ContentType, rc.AcceptContentTypes = "", ""
	// The watches get a connection of their own (a config with a Proxy func is never
	// given a shared transport; this is client-go's default proxy). Sharing one HTTP/2
	// connection with hundreds of binds a second, muster's pod watch fell behind and the
	// API server closed it about 30 times in a 10 s bench run; the other clients'
	// watches were closed with it. A proxy the kubeconfig names is kept.
	if rc.Proxy == nil {
		rc.Proxy = http.ProxyFromEnvironment
	}
	mgr, err := ctrl.NewManager(rc, mopts)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	kube, err := kubernetes.NewForConfig(builtinConfig(requestConfig(opts.Config)))
	if err != nil {
		return nil, fmt.Errorf("creating a clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(requestConfig(opts.Config))
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	recorder, broadcaster, err := eventRecorder(opts.Config, scheme)
	if err != nil {
		return nil, fmt.Errorf("creating the Event recorder: %w", err)
	}
	ledger, err := addDashboard(mgr, cfg, kube, opts)
	if err != nil {
		return nil, err
	}
	if err := addVisibility(mgr, cfg, opts, ledger); err != nil {
		return nil, err
	}
	m := opts.Metrics
	if m == nil {
		m = defaultMetrics()
	}
	k := &kit{
		cfg: cfg, clock: opts.Clock, log: opts.Log, kube: kube, dyn: dyn, cache: mgr.GetCache(),
		recorder: limitEvents(recorder, m.EventsDropped), metrics: m,
	}
	filters, err := kubefit.New(kubefit.Options{PluginConfig: cfg.Placement.PluginConfig})
	if err != nil {
		return nil, fmt.Errorf("placement.pluginConfig: %w", err)
	}
	s := &scheduler{kit: k, mgr: mgr, broadcaster: broadcaster, filters: filters}
	if ledger != nil {
		s.observer = ledger
	}
	if err := mgr.Add(s); err != nil {
		return nil, fmt.Errorf("adding the scheduler: %w", err)
	}
	return mgr, nil
}

// requestTimeout bounds each request muster sends through its clientset and dynamic
// client, which never watch (the manager's cache watches, on a config of its own): a
// request that the API server or the network holds holds up the worker that sent it,
// and what waits on its answer (a group whose claims' release is in flight), for no
// longer. A kubeconfig's own timeout is kept.
const requestTimeout = 30 * time.Second

// requestConfig returns cfg with requestTimeout, unless it sets a timeout of its own.
func requestConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	if out.Timeout == 0 {
		out.Timeout = requestTimeout
	}
	return out
}

// builtinConfig returns cfg for a client of built-in types only: protobuf, as
// kube-scheduler's --kube-api-content-type defaults to, unless cfg names a content
// type.
func builtinConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	if out.ContentType == "" {
		out.ContentType = runtime.ContentTypeProtobuf
		out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	return out
}
