package v1alpha1

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FieldError is one problem with one field of a Configuration or GroupPolicy.
type FieldError struct {
	// Path is the field's dotted JSON path, e.g. "groupDefaults.maxRetries".
	Path string
	// Value is the offending value as written in messages (strings quoted), or empty
	// when the field is missing.
	Value string
	// Reason says what was expected.
	Reason string
}

// Error renders the problem as "path: value: reason", or "path: reason" for a missing
// field.
func (e *FieldError) Error() string {
	if e.Value == "" {
		return e.Path + ": " + e.Reason
	}
	return e.Path + ": " + e.Value + ": " + e.Reason
}

// Validate reports every problem with c, each as a *FieldError naming the field path and
// the value, joined with errors.Join. It expects a defaulted Configuration (see
// SetDefaults): unset fields that have defaults are reported as missing.
func (c *Configuration) Validate() error {
	var errs []error
	if c.APIVersion != GroupVersion.String() {
		errs = append(errs, &FieldError{"apiVersion", fmt.Sprintf("%q", c.APIVersion),
			fmt.Sprintf("expected %q", GroupVersion.String())})
	}
	if c.Kind != ConfigurationKind {
		errs = append(errs, &FieldError{"kind", fmt.Sprintf("%q", c.Kind),
			fmt.Sprintf("expected %q", ConfigurationKind)})
	}
	errs = append(errs, schedulerNames(c.SchedulerName, c.AdditionalSchedulerNames)...)
	errs = append(errs, dnsSubdomain("defaultQueue", c.DefaultQueue)...)
	if err := c.GroupDefaults.Validate("groupDefaults"); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, requireComplete("groupDefaults", c.GroupDefaults)...)
	errs = append(errs, positiveDuration("starvationThreshold", c.StarvationThreshold, true)...)
	errs = append(errs, nonNegativeDuration("sizeOrder.handicapPerDeviceHour", c.SizeOrder.HandicapPerDeviceHour)...)
	errs = append(errs, positiveDuration("sizeOrder.maxHandicap", c.SizeOrder.MaxHandicap, true)...)
	if c.Preemption != PreemptLowerPriority && c.Preemption != PreemptNever {
		errs = append(errs, &FieldError{"preemption", fmt.Sprintf("%q", c.Preemption),
			fmt.Sprintf("expected %q or %q", PreemptLowerPriority, PreemptNever)})
	}
	errs = append(errs, positiveDuration("preemptionSlack", c.PreemptionSlack, true)...)
	errs = append(errs, positiveDuration("reconcilePeriod", c.ReconcilePeriod, true)...)
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		errs = append(errs, &FieldError{"namespace", fmt.Sprintf("%q", c.Namespace),
			"must be a namespace name (DNS-1123 label): " + strings.Join(msgs, "; ")})
	}
	errs = append(errs, c.LeaderElection.validate("leaderElection")...)
	errs = append(errs, listenAddr("metricsAddr", c.MetricsAddr)...)
	errs = append(errs, listenAddr("healthAddr", c.HealthAddr)...)
	errs = append(errs, loopbackAddr("dashboardAddr", c.DashboardAddr)...)
	errs = append(errs, loopbackAddr("pprofAddr", c.PprofAddr)...)
	errs = append(errs, listenAddr("visibility.bindAddress", c.Visibility.BindAddress)...)
	if c.Visibility.BindAddress != DisabledAddr && anyPort(c.Visibility.BindAddress) {
		errs = append(errs, &FieldError{"visibility.bindAddress", fmt.Sprintf("%q", c.Visibility.BindAddress),
			"expected a fixed port: the APIService names it"})
	}
	if c.Visibility.Dashboard && c.Visibility.BindAddress == DisabledAddr {
		errs = append(errs, &FieldError{"visibility.dashboard", "true",
			`needs the visibility API: set visibility.bindAddress (deploy/ uses ":8443")`})
	}
	if msgs := validation.IsDNS1123Label(c.Visibility.ServiceName); len(msgs) > 0 {
		errs = append(errs, &FieldError{"visibility.serviceName", fmt.Sprintf("%q", c.Visibility.ServiceName),
			"must be a Service name (DNS-1123 label): " + strings.Join(msgs, "; ")})
	}
	if c.MetricsAddr == c.HealthAddr && c.MetricsAddr != DisabledAddr && !anyPort(c.MetricsAddr) {
		errs = append(errs, &FieldError{"healthAddr", fmt.Sprintf("%q", c.HealthAddr),
			"must differ from metricsAddr"})
	}
	errs = append(errs, c.ClientConnection.validate("clientConnection")...)
	return errors.Join(errs...)
}

// Validate reports every problem with the fields of p that are set, each as a
// *FieldError whose path starts with path (e.g. "spec.defaults"), joined with
// errors.Join. Unset fields are valid: they fall back to a less specific policy.
func (p *GroupPolicy) Validate(path string) error {
	var errs []error
	errs = append(errs, positiveDuration(path+".startTimeout", p.StartTimeout, false)...)
	errs = append(errs, positiveDuration(path+".recoveryTimeout", p.RecoveryTimeout, false)...)
	if p.MaxRetries != nil && *p.MaxRetries < 0 {
		errs = append(errs, &FieldError{path + ".maxRetries", strconv.Itoa(int(*p.MaxRetries)), "must be >= 0"})
	}
	errs = append(errs, positiveDuration(path+".backoffBase", p.BackoffBase, false)...)
	errs = append(errs, positiveDuration(path+".backoffMax", p.BackoffMax, false)...)
	if p.BackoffBase != nil && p.BackoffMax != nil && p.BackoffMax.Duration < p.BackoffBase.Duration {
		errs = append(errs, &FieldError{path + ".backoffMax", p.BackoffMax.Duration.String(),
			fmt.Sprintf("must be >= backoffBase (%s)", p.BackoffBase.Duration)})
	}
	return errors.Join(errs...)
}

// validate reports problems with the lease settings; they matter only when leader
// election is enabled.
func (l *LeaderElection) validate(path string) []error {
	if l.Enabled == nil {
		return []error{&FieldError{Path: path + ".enabled", Reason: "must be set"}}
	}
	if !*l.Enabled {
		return nil
	}
	errs := dnsSubdomain(path+".leaseName", l.LeaseName)
	if msgs := validation.IsDNS1123Label(l.LeaseNamespace); len(msgs) > 0 {
		errs = append(errs, &FieldError{path + ".leaseNamespace", fmt.Sprintf("%q", l.LeaseNamespace),
			"must be a namespace name (DNS-1123 label): " + strings.Join(msgs, "; ")})
	}
	return append(errs, l.validateTimings(path)...)
}

// leaseJitter is client-go's leaderelection.JitterFactor: renewDeadline must exceed
// retryPeriod times it.
const leaseJitter = 1.2

// validateTimings reports lease timings that are unset, not positive, or in an order
// client-go's leader election refuses.
func (l *LeaderElection) validateTimings(path string) []error {
	errs := positiveDuration(path+".leaseDuration", l.LeaseDuration, true)
	errs = append(errs, positiveDuration(path+".renewDeadline", l.RenewDeadline, true)...)
	errs = append(errs, positiveDuration(path+".retryPeriod", l.RetryPeriod, true)...)
	if len(errs) > 0 {
		return errs
	}
	if l.RenewDeadline.Duration >= l.LeaseDuration.Duration {
		errs = append(errs, &FieldError{path + ".renewDeadline", l.RenewDeadline.Duration.String(),
			fmt.Sprintf("must be less than leaseDuration (%s)", l.LeaseDuration.Duration)})
	}
	if float64(l.RenewDeadline.Duration) <= leaseJitter*float64(l.RetryPeriod.Duration) {
		errs = append(errs, &FieldError{path + ".retryPeriod", l.RetryPeriod.Duration.String(),
			fmt.Sprintf("must be less than renewDeadline (%s) / %.1f", l.RenewDeadline.Duration, leaseJitter)})
	}
	return errs
}

// requireComplete reports the fields of a policy that must be set but are not: the
// configuration's groupDefaults is the last fallback, so it must be complete.
func requireComplete(path string, p GroupPolicy) []error {
	var errs []error
	for _, f := range []struct {
		name  string
		unset bool
	}{
		{"startTimeout", p.StartTimeout == nil},
		{"recoveryTimeout", p.RecoveryTimeout == nil},
		{"maxRetries", p.MaxRetries == nil},
		{"backoffBase", p.BackoffBase == nil},
		{"backoffMax", p.BackoffMax == nil},
	} {
		if f.unset {
			errs = append(errs, &FieldError{Path: path + "." + f.name, Reason: "must be set"})
		}
	}
	return errs
}

// positiveDuration reports a duration that is not > 0, or that is unset when required.
func positiveDuration(path string, d *metav1.Duration, required bool) []error {
	switch {
	case d == nil && required:
		return []error{&FieldError{Path: path, Reason: "must be set"}}
	case d != nil && d.Duration <= 0:
		return []error{&FieldError{path, d.Duration.String(), "must be > 0"}}
	}
	return nil
}

// nonNegativeDuration reports a duration below zero.
func nonNegativeDuration(path string, d *metav1.Duration) []error {
	if d != nil && d.Duration < 0 {
		return []error{&FieldError{path, d.Duration.String(), "must be >= 0"}}
	}
	return nil
}

// schedulerNames reports a schedulerName or additional name that is not a DNS-1123
// subdomain, is kube-scheduler's own (muster would race it for every pod), or is named
// twice.
func schedulerNames(primary string, additional []string) []error {
	check := func(path, name string) []error {
		if name == corev1.DefaultSchedulerName {
			return []error{&FieldError{path, fmt.Sprintf("%q", name),
				"kube-scheduler's own schedulerName: muster and kube-scheduler would both bind every pod that names no scheduler"}}
		}
		return dnsSubdomain(path, name)
	}
	errs := check("schedulerName", primary)
	seen := map[string]string{primary: "schedulerName"}
	for i, name := range additional {
		path := fmt.Sprintf("additionalSchedulerNames[%d]", i)
		if first, dup := seen[name]; dup {
			errs = append(errs, &FieldError{path, fmt.Sprintf("%q", name), "already named by " + first})
			continue
		}
		seen[name] = path
		errs = append(errs, check(path, name)...)
	}
	return errs
}

// SchedulerNames returns the spec.schedulerName values of the pods muster schedules:
// schedulerName first, then additionalSchedulerNames.
func (c *Configuration) SchedulerNames() []string {
	return append([]string{c.SchedulerName}, c.AdditionalSchedulerNames...)
}

// Schedules reports whether pods with spec.schedulerName schedulerName are muster's.
func (c *Configuration) Schedules(schedulerName string) bool {
	return schedulerName == c.SchedulerName || slices.Contains(c.AdditionalSchedulerNames, schedulerName)
}

// dnsSubdomain reports a value that is not a DNS-1123 subdomain, the form of object
// names and of a pod's spec.schedulerName.
func dnsSubdomain(path, value string) []error {
	if msgs := validation.IsDNS1123Subdomain(value); len(msgs) > 0 {
		return []error{&FieldError{path, fmt.Sprintf("%q", value),
			"must be a DNS-1123 subdomain: " + strings.Join(msgs, "; ")}}
	}
	return nil
}

// listenAddr reports an address that is neither DisabledAddr nor host:port with a port
// in 0..65535.
func listenAddr(path, addr string) []error {
	if addr == DisabledAddr {
		return nil
	}
	bad := &FieldError{path, fmt.Sprintf("%q", addr),
		fmt.Sprintf(`expected host:port (e.g. ":8080") or %q to disable`, DisabledAddr)}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []error{bad}
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return []error{bad}
	}
	return nil
}

// anyPort reports whether addr asks for port 0 (any free port), which two servers may
// both ask for.
func anyPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port == "0"
}

// loopbackAddr checks a listen address that must stay on the machine: host:port whose
// host is a loopback IP or "localhost", or DisabledAddr. An empty host, which listens
// on every interface, is refused.
func loopbackAddr(path, addr string) []error {
	if errs := listenAddr(path, addr); errs != nil || addr == DisabledAddr {
		return errs
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return []error{&FieldError{path, fmt.Sprintf("%q", addr),
		"expected a loopback host (127.0.0.1:PORT, [::1]:PORT or localhost:PORT): this server does not authenticate its clients; reach it with kubectl port-forward"}}
}
