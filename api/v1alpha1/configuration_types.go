package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedv1 "k8s.io/kube-scheduler/config/v1"
)

// ConfigurationKind is the kind of muster's configuration file.
const ConfigurationKind = "Configuration"

// Defaults applied by SetDefaults to fields left unset in a Configuration.
const (
	DefaultSchedulerName               = "muster"
	DefaultQueueName                   = "default"
	DefaultStartTimeout                = 5 * time.Minute
	DefaultRecoveryTimeout             = 5 * time.Minute
	DefaultMaxRetries            int32 = 3
	DefaultBackoffBase                 = 30 * time.Second
	DefaultBackoffMax                  = 10 * time.Minute
	DefaultStarvationThreshold         = 10 * time.Minute
	DefaultPreemptionSlack             = 2 * time.Minute
	DefaultHandicapPerDeviceHour       = 12 * time.Minute
	DefaultMaxHandicap                 = 2 * time.Hour
	DefaultLeaseName                   = "muster"
	DefaultLeaseNamespace              = "muster-system"
	DefaultLeaseDuration               = 15 * time.Second
	DefaultRenewDeadline               = 10 * time.Second
	DefaultRetryPeriod                 = 2 * time.Second
	DefaultNamespace                   = "muster-system"
	DefaultVisibilityService           = "muster-visibility"
	DefaultMetricsAddr                 = ":8080"
	DefaultHealthAddr                  = ":8081"
	DefaultReconcilePeriod             = time.Second
)

// Values of Configuration.Preemption.
const (
	// PreemptLowerPriority lets a waiting group evict whole admitted groups of lower
	// priority, the fewest that make room, unless its pods' preemptionPolicy is Never.
	PreemptLowerPriority = "LowerPriority"
	// PreemptNever turns preemption off.
	PreemptNever = "Never"
)

// DisabledAddr, as metricsAddr or healthAddr, turns that server off.
const DisabledAddr = "0"

// Configuration is muster's versioned configuration file (apiVersion
// muster.dev/v1alpha1, kind Configuration). It is read from disk at start-up by
// LoadConfiguration; it is not an object served by the API server.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// schedulerName is the spec.schedulerName that marks pods as muster's.
	// Defaults to "muster".
	SchedulerName string `json:"schedulerName,omitempty"`

	// additionalSchedulerNames are further spec.schedulerName values whose pods muster
	// schedules as its own, for tools that name another gang scheduler and cannot be
	// told muster's: KubeRay's scheduler-plugins integration names
	// "scheduler-plugins-scheduler", Volcano's integrations "volcano". Name only
	// schedulers that are not installed: two schedulers of one name race for its pods.
	// schedulerName stays the name muster reports as and expects in its diagnoses.
	AdditionalSchedulerNames []string `json:"additionalSchedulerNames,omitempty"`

	// defaultQueue is the Queue of groups that name none and whose namespace no
	// Queue selects. Defaults to "default".
	DefaultQueue string `json:"defaultQueue,omitempty"`

	// groupDefaults are the per-group settings used where neither the group nor its
	// Queue sets them. Defaults: startTimeout 5m, recoveryTimeout 5m, maxRetries 3,
	// backoffBase 30s, backoffMax 10m.
	GroupDefaults GroupPolicy `json:"groupDefaults,omitempty"`

	// starvationThreshold is how long a group may wait at the head of its queue
	// before muster reserves capacity for it. Defaults to 10m.
	StarvationThreshold *metav1.Duration `json:"starvationThreshold,omitempty"`

	// sizeOrder orders each queue by what its groups are expected to hold: a group's
	// place is its queue time plus a handicap for each device-hour (GPUs times expected
	// run time) it is expected to hold, so short, small groups go ahead of long, large
	// ones queued a little earlier, and no group is ever passed by one queued more than
	// maxHandicap after it. Defaults: handicapPerDeviceHour 12m, maxHandicap 2h;
	// handicapPerDeviceHour 0 orders by queue time alone.
	SizeOrder SizeOrder `json:"sizeOrder,omitempty"`

	// preemption is whether a group that does not fit may evict admitted groups of
	// lower priority: "LowerPriority" (whole groups, the fewest that make room; a
	// group whose pods have preemptionPolicy Never does not preempt) or "Never".
	// Defaults to "LowerPriority", as kube-scheduler preempts pods.
	Preemption string `json:"preemption,omitempty"`

	// preemptionSlack is how long past its victims' longest termination grace period
	// (30s for a pod that sets none) a preemption waits for their pods to be gone and
	// their ResourceClaims deallocated. Then it ends with a PreemptionTimedOut Warning
	// event on the preemptor, whose nodes are no longer kept for it, and the
	// preemptor may preempt other groups. A victim pod stuck terminating (a finalizer
	// nobody removes, a node that died) would otherwise keep them for ever. Raise it
	// where nodes take long to give devices back (a GPU reset, a DRA driver's
	// cleanup). Defaults to 2m.
	PreemptionSlack *metav1.Duration `json:"preemptionSlack,omitempty"`

	// namespace is muster's own namespace, where only muster (and the cluster's
	// administrators) may write: it keeps there the records of the pods it will create
	// again and the Secret muster-signing-key whose key signs those records and the
	// plans it writes on pods. Defaults to "muster-system".
	Namespace string `json:"namespace,omitempty"`

	// leaderElection configures the Lease that lets one of several muster
	// replicas act at a time.
	LeaderElection LeaderElection `json:"leaderElection,omitempty"`

	// metricsAddr is the host:port of the Prometheus metrics server, or "0" for
	// none. Defaults to ":8080".
	MetricsAddr string `json:"metricsAddr,omitempty"`

	// healthAddr is the host:port of the /healthz and /readyz server, or "0" for
	// none. Defaults to ":8081".
	HealthAddr string `json:"healthAddr,omitempty"`

	// dashboardAddr is the host:port of the read-only web dashboard, or "0" for
	// none. Defaults to "0". The dashboard does not authenticate its viewers yet, so
	// the host must be a loopback address (127.0.0.1:8090, [::1]:8090, localhost:8090):
	// reach it with kubectl port-forward.
	DashboardAddr string `json:"dashboardAddr,omitempty"`

	// pprofAddr is the host:port of Go's profiling endpoints (/debug/pprof/), or "0"
	// for none. Defaults to "0". Profiles show the scheduler's internals and the
	// server does not authenticate, so the host must be a loopback address
	// (127.0.0.1:6060): reach it with kubectl port-forward.
	PprofAddr string `json:"pprofAddr,omitempty"`

	// visibility configures muster's visibility API (visibility.muster.dev), which
	// answers what a tenant's `muster explain` may not read itself: the fit of its
	// group on the cluster's nodes now, and its Queue.
	Visibility Visibility `json:"visibility,omitempty"`

	// reconcilePeriod is the longest muster waits between two scheduling passes
	// when no event wakes it earlier. Defaults to 1s.
	ReconcilePeriod *metav1.Duration `json:"reconcilePeriod,omitempty"`

	// clientConnection sets the rate, burst and encoding of muster's requests to the
	// API server. Defaults: qps 1000, burst 2000, contentType
	// application/vnd.kubernetes.protobuf.
	ClientConnection ClientConnection `json:"clientConnection,omitempty"`

	// placement configures how muster judges nodes for a group's members.
	Placement Placement `json:"placement,omitempty"`
}

// SizeOrder sets the handicap by which a queue orders its groups by size (see
// Configuration.SizeOrder).
type SizeOrder struct {
	// handicapPerDeviceHour is how far back a group goes in its queue's order for each
	// device-hour it is expected to hold: its members' extended resources (GPUs), or cpu
	// cores when they ask for none, times its expected run time (annotation
	// muster.dev/expected-runtime, activeDeadlineSeconds, else the median of its owner
	// kind's last runs in its queue). 0 turns size order off.
	HandicapPerDeviceHour *metav1.Duration `json:"handicapPerDeviceHour,omitempty"`

	// maxHandicap caps the handicap; a group whose run time is unknown gets all of it.
	MaxHandicap *metav1.Duration `json:"maxHandicap,omitempty"`
}

// Placement configures the kube-scheduler Filter plugins muster runs inside its
// placement (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
// NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
// PodTopologySpread, InterPodAffinity).
type Placement struct {
	// pluginConfig sets those plugins' arguments, written as a kube-scheduler
	// profile's pluginConfig (kubescheduler.config.k8s.io/v1), e.g. PodTopologySpread's
	// defaultConstraints or NodeResourcesFit's ignoredResources. Plugins it does not
	// name keep kube-scheduler v1.37's defaults. muster fails to start, naming the
	// plugin, on arguments kube-scheduler would refuse.
	PluginConfig []schedv1.PluginConfig `json:"pluginConfig,omitempty"`
}

// Visibility configures the HTTPS server of muster's visibility API. The API server
// forwards requests for visibility.muster.dev to it (an APIService, see
// deploy/visibility) with the caller's identity; muster authenticates and authorizes
// each request against the API server (TokenReview, SubjectAccessReview), as any
// aggregated API server does.
type Visibility struct {
	// bindAddress is the host:port of the server, or "0" for none. Defaults to "0".
	BindAddress string `json:"bindAddress,omitempty"`

	// certDir holds the serving certificate, tls.crt and tls.key (a mounted
	// Secret). When they are missing, muster writes a self-signed pair there; with
	// no certDir, it keeps one in memory.
	CertDir string `json:"certDir,omitempty"`

	// serviceName is the Service, in muster's namespace, that the APIService names:
	// a self-signed certificate is valid for its DNS names. Defaults to
	// "muster-visibility".
	ServiceName string `json:"serviceName,omitempty"`

	// dashboard serves the web dashboard through the visibility API too, at
	// /apis/visibility.muster.dev/v1alpha1/dashboard/ behind the API server (reach it
	// with kubectl proxy), each request authorized like the API's: get on
	// dashboard.visibility.muster.dev. Defaults to false.
	Dashboard bool `json:"dashboard,omitempty"`
}

// LeaderElection configures leader election among muster replicas.
type LeaderElection struct {
	// enabled turns leader election on. Defaults to true.
	Enabled *bool `json:"enabled,omitempty"`

	// leaseName is the name of the coordination.k8s.io Lease. Defaults to "muster".
	LeaseName string `json:"leaseName,omitempty"`

	// leaseNamespace is the namespace of the Lease. Defaults to "muster-system".
	LeaseNamespace string `json:"leaseNamespace,omitempty"`

	// leaseDuration is how long a standby replica waits, after the leader last
	// renewed the Lease, before it takes the lease over: the longest a killed
	// leader leaves the cluster without a scheduler. Defaults to 15s, as
	// kube-scheduler's.
	LeaseDuration *metav1.Duration `json:"leaseDuration,omitempty"`

	// renewDeadline is how long the leader keeps trying to renew the Lease before
	// it gives up leading and exits. Must be less than leaseDuration. Defaults to
	// 10s.
	RenewDeadline *metav1.Duration `json:"renewDeadline,omitempty"`

	// retryPeriod is how often replicas try to acquire or renew the Lease. Must be
	// less than renewDeadline divided by 1.2 (client-go's jitter). Defaults to 2s.
	RetryPeriod *metav1.Duration `json:"retryPeriod,omitempty"`
}
