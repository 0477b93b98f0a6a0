package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultConfiguration returns a Configuration with apiVersion and kind set and every
// field at its default: what muster runs with when given no configuration file.
func DefaultConfiguration() *Configuration {
	c := &Configuration{}
	c.SetDefaults()
	return c
}

// SetDefaults fills every unset field of c with its default, including apiVersion and
// kind. Fields already set, even to invalid values, are left for Validate to report.
func (c *Configuration) SetDefaults() {
	if c.APIVersion == "" {
		c.APIVersion = GroupVersion.String()
	}
	if c.Kind == "" {
		c.Kind = ConfigurationKind
	}
	if c.SchedulerName == "" {
		c.SchedulerName = DefaultSchedulerName
	}
	if c.DefaultQueue == "" {
		c.DefaultQueue = DefaultQueueName
	}
	c.GroupDefaults = c.GroupDefaults.WithFallback(DefaultGroupPolicy())
	setDuration(&c.StarvationThreshold, DefaultStarvationThreshold)
	setDuration(&c.PreemptionSlack, DefaultPreemptionSlack)
	setDuration(&c.SizeOrder.HandicapPerDeviceHour, DefaultHandicapPerDeviceHour)
	setDuration(&c.SizeOrder.MaxHandicap, DefaultMaxHandicap)
	if c.Preemption == "" {
		c.Preemption = PreemptLowerPriority
	}
	setDuration(&c.ReconcilePeriod, DefaultReconcilePeriod)
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.LeaderElection.Enabled == nil {
		enabled := true
		c.LeaderElection.Enabled = &enabled
	}
	if c.LeaderElection.LeaseName == "" {
		c.LeaderElection.LeaseName = DefaultLeaseName
	}
	if c.LeaderElection.LeaseNamespace == "" {
		c.LeaderElection.LeaseNamespace = DefaultLeaseNamespace
	}
	setDuration(&c.LeaderElection.LeaseDuration, DefaultLeaseDuration)
	setDuration(&c.LeaderElection.RenewDeadline, DefaultRenewDeadline)
	setDuration(&c.LeaderElection.RetryPeriod, DefaultRetryPeriod)
	if c.MetricsAddr == "" {
		c.MetricsAddr = DefaultMetricsAddr
	}
	if c.HealthAddr == "" {
		c.HealthAddr = DefaultHealthAddr
	}
	if c.DashboardAddr == "" {
		c.DashboardAddr = DisabledAddr
	}
	if c.PprofAddr == "" {
		c.PprofAddr = DisabledAddr
	}
	if c.Visibility.BindAddress == "" {
		c.Visibility.BindAddress = DisabledAddr
	}
	if c.Visibility.ServiceName == "" {
		c.Visibility.ServiceName = DefaultVisibilityService
	}
	c.ClientConnection.setDefaults()
}

// DefaultGroupPolicy returns the built-in per-group settings, every field set: the last
// fallback below the configuration file's groupDefaults.
func DefaultGroupPolicy() GroupPolicy {
	maxRetries := DefaultMaxRetries
	return GroupPolicy{
		StartTimeout:    &metav1.Duration{Duration: DefaultStartTimeout},
		RecoveryTimeout: &metav1.Duration{Duration: DefaultRecoveryTimeout},
		MaxRetries:      &maxRetries,
		BackoffBase:     &metav1.Duration{Duration: DefaultBackoffBase},
		BackoffMax:      &metav1.Duration{Duration: DefaultBackoffMax},
	}
}

// setDuration sets *d to def when *d is nil.
func setDuration(d **metav1.Duration, def time.Duration) {
	if *d == nil {
		*d = &metav1.Duration{Duration: def}
	}
}
