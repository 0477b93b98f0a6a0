package v1alpha1

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const header = "apiVersion: muster.dev/v1alpha1\nkind: Configuration\n"

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func ptr[T any](v T) *T { return &v }

func TestParseConfigurationAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		// edit turns DefaultConfiguration() into the expected result.
		edit func(c *Configuration)
	}{
		{name: "header only gives every default", yaml: header, edit: func(*Configuration) {}},
		{
			name: "every field set",
			yaml: header + `schedulerName: gang
defaultQueue: research
groupDefaults:
  startTimeout: 90s
  recoveryTimeout: 2m
  maxRetries: 5
  backoffBase: 1s
  backoffMax: 1h
starvationThreshold: 30m
preemption: Never
preemptionSlack: 15m
namespace: gang-system
leaderElection:
  enabled: false
  leaseName: gang-lock
  leaseNamespace: ops
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
metricsAddr: 127.0.0.1:9090
healthAddr: "0"
reconcilePeriod: 250ms
`,
			edit: func(c *Configuration) {
				c.SchedulerName = "gang"
				c.DefaultQueue = "research"
				c.GroupDefaults = GroupPolicy{StartTimeout: dur(90 * time.Second), RecoveryTimeout: dur(2 * time.Minute),
					MaxRetries: ptr[int32](5), BackoffBase: dur(time.Second), BackoffMax: dur(time.Hour)}
				c.StarvationThreshold = dur(30 * time.Minute)
				c.Preemption = PreemptNever
				c.PreemptionSlack = dur(15 * time.Minute)
				c.Namespace = "gang-system"
				c.LeaderElection = LeaderElection{Enabled: ptr(false), LeaseName: "gang-lock", LeaseNamespace: "ops",
					LeaseDuration: dur(4 * time.Second), RenewDeadline: dur(3 * time.Second), RetryPeriod: dur(500 * time.Millisecond)}
				c.MetricsAddr = "127.0.0.1:9090"
				c.HealthAddr = DisabledAddr
				c.ReconcilePeriod = dur(250 * time.Millisecond)
			},
		},
		{
			name: "zero retries is kept, not defaulted",
			yaml: header + "groupDefaults:\n  maxRetries: 0\n",
			edit: func(c *Configuration) { c.GroupDefaults.MaxRetries = ptr[int32](0) },
		},
		{
			name: "JSON is YAML",
			yaml: `{"apiVersion": "muster.dev/v1alpha1", "kind": "Configuration", "schedulerName": "x"}`,
			edit: func(c *Configuration) { c.SchedulerName = "x" },
		},
		{
			name: "additional scheduler names",
			yaml: header + "additionalSchedulerNames: [scheduler-plugins-scheduler, volcano]\n",
			edit: func(c *Configuration) {
				c.AdditionalSchedulerNames = []string{"scheduler-plugins-scheduler", "volcano"}
			},
		},
		{
			name: "two servers on any free port",
			yaml: header + "metricsAddr: 127.0.0.1:0\nhealthAddr: 127.0.0.1:0\n",
			edit: func(c *Configuration) { c.MetricsAddr, c.HealthAddr = "127.0.0.1:0", "127.0.0.1:0" },
		},
		{
			name: "dashboard on loopback",
			yaml: header + "dashboardAddr: 127.0.0.1:8090\n",
			edit: func(c *Configuration) { c.DashboardAddr = "127.0.0.1:8090" },
		},
		{
			name: "profiling on loopback",
			yaml: header + "pprofAddr: 127.0.0.1:6060\n",
			edit: func(c *Configuration) { c.PprofAddr = "127.0.0.1:6060" },
		},
		{
			name: "visibility API served with a mounted certificate",
			yaml: header + "visibility:\n  bindAddress: :8443\n  certDir: /etc/muster/visibility\n",
			edit: func(c *Configuration) {
				c.Visibility.BindAddress, c.Visibility.CertDir = ":8443", "/etc/muster/visibility"
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfiguration([]byte(tc.yaml))
			if err != nil {
				t.Fatalf("ParseConfiguration error: %v", err)
			}
			want := DefaultConfiguration()
			tc.edit(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("configuration (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseConfigurationRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		wantErr []string // substrings, all of which the error must contain
	}{
		{"empty document", "", []string{`apiVersion: missing, expected "muster.dev/v1alpha1"`}},
		{"no apiVersion", "kind: Configuration\n", []string{`apiVersion: missing, expected "muster.dev/v1alpha1"`}},
		{"no kind", "apiVersion: muster.dev/v1alpha1\n", []string{`kind: missing, expected "Configuration"`}},
		{"wrong apiVersion", "apiVersion: muster.dev/v1beta1\nkind: Configuration\n",
			[]string{`apiVersion: "muster.dev/v1beta1": expected "muster.dev/v1alpha1"`}},
		{"wrong kind", "apiVersion: muster.dev/v1alpha1\nkind: KubeSchedulerConfiguration\nprofiles: []\n",
			[]string{`kind: "KubeSchedulerConfiguration": expected "Configuration"`}},
		{"numeric apiVersion", "apiVersion: 1\nkind: Configuration\n", []string{`apiVersion: 1: expected`}},
		{"unknown top-level field", header + "schedulername: x\n", []string{`unknown field "schedulername"`}},
		{"unknown nested field", header + "groupDefaults:\n  maxRetry: 2\n", []string{`unknown field "groupDefaults.maxRetry"`}},
		{"duplicate field", header + "defaultQueue: a\ndefaultQueue: b\n", []string{`"defaultQueue" already set`}},
		{"not YAML", header + "groupDefaults: [\n", []string{"parsing YAML"}},
		{"not an object", "- a\n- b\n", []string{"expected a YAML mapping", "cannot unmarshal array"}},
		{"wrong type", header + "groupDefaults:\n  maxRetries: three\n", []string{"groupDefaults.maxRetries", "int32"}},
		{"bad duration", header + "groupDefaults:\n  startTimeout: 5 minutes\n",
			[]string{`groupDefaults.startTimeout: "5 minutes": expected a duration`}},
		{"number as duration", header + "reconcilePeriod: 5\n", []string{`reconcilePeriod: 5: expected a duration string`}},
		{"negative retries", header + "groupDefaults:\n  maxRetries: -1\n", []string{"groupDefaults.maxRetries: -1: must be >= 0"}},
		{"zero start timeout", header + "groupDefaults:\n  startTimeout: 0s\n", []string{"groupDefaults.startTimeout: 0s: must be > 0"}},
		{"negative period", header + "reconcilePeriod: -1s\n", []string{"reconcilePeriod: -1s: must be > 0"}},
		{"zero preemption slack", header + "preemptionSlack: 0s\n", []string{"preemptionSlack: 0s: must be > 0"}},
		{"backoff max below base", header + "groupDefaults:\n  backoffBase: 1m\n  backoffMax: 30s\n",
			[]string{"groupDefaults.backoffMax: 30s: must be >= backoffBase (1m0s)"}},
		{"bad scheduler name", header + "schedulerName: Gang_Scheduler\n",
			[]string{`schedulerName: "Gang_Scheduler": must be a DNS-1123 subdomain`}},
		{"kube-scheduler's name", header + "schedulerName: default-scheduler\n",
			[]string{`schedulerName: "default-scheduler": kube-scheduler's own schedulerName`}},
		{"bad additional scheduler name", header + "additionalSchedulerNames: [volcano, Ray_Sched]\n",
			[]string{`additionalSchedulerNames[1]: "Ray_Sched": must be a DNS-1123 subdomain`}},
		{"additional name twice", header + "additionalSchedulerNames: [volcano, volcano]\n",
			[]string{`additionalSchedulerNames[1]: "volcano": already named by additionalSchedulerNames[0]`}},
		{"additional name is schedulerName", header + "additionalSchedulerNames: [muster]\n",
			[]string{`additionalSchedulerNames[0]: "muster": already named by schedulerName`}},
		{"additional name is kube-scheduler's", header + "additionalSchedulerNames: [default-scheduler]\n",
			[]string{`additionalSchedulerNames[0]: "default-scheduler": kube-scheduler's own schedulerName`}},
		{"unknown preemption", header + "preemption: Always\n",
			[]string{`preemption: "Always": expected "LowerPriority" or "Never"`}},
		{"bad queue name", header + "defaultQueue: a/b\n", []string{`defaultQueue: "a/b": must be a DNS-1123 subdomain`}},
		{"bad namespace", header + "namespace: Muster_System\n",
			[]string{`namespace: "Muster_System": must be a namespace name`}},
		{"bad lease namespace", header + "leaderElection:\n  leaseNamespace: kube.system\n",
			[]string{`leaderElection.leaseNamespace: "kube.system": must be a namespace name`}},
		{"renew deadline not below the lease", header + "leaderElection:\n  leaseDuration: 5s\n  renewDeadline: 5s\n",
			[]string{"leaderElection.renewDeadline: 5s: must be less than leaseDuration (5s)"}},
		{"retry period too long for the deadline", header + "leaderElection:\n  renewDeadline: 2s\n  retryPeriod: 2s\n",
			[]string{"leaderElection.retryPeriod: 2s: must be less than renewDeadline (2s) / 1.2"}},
		{"lease duration not a duration", header + "leaderElection:\n  leaseDuration: soon\n",
			[]string{`leaderElection.leaseDuration: "soon": expected a duration`}},
		{"port without colon", header + "metricsAddr: \"8080\"\n", []string{`metricsAddr: "8080": expected host:port`}},
		{"port out of range", header + "healthAddr: :70000\n", []string{`healthAddr: ":70000": expected host:port`}},
		{"dashboard on every interface", header + "dashboardAddr: :8090\n",
			[]string{`dashboardAddr: ":8090": expected a loopback host`}},
		{"dashboard on a routable address", header + "dashboardAddr: 10.0.0.5:8090\n",
			[]string{`dashboardAddr: "10.0.0.5:8090": expected a loopback host`}},
		{"profiling on every interface", header + "pprofAddr: :6060\n",
			[]string{`pprofAddr: ":6060": expected a loopback host`}},
		{"visibility on any free port", header + "visibility:\n  bindAddress: :0\n",
			[]string{`visibility.bindAddress: ":0": expected a fixed port`}},
		{"visibility without a port", header + "visibility:\n  bindAddress: localhost\n",
			[]string{`visibility.bindAddress: "localhost": expected host:port`}},
		{"dashboard behind no visibility API", header + "visibility:\n  dashboard: true\n",
			[]string{`visibility.dashboard: true: needs the visibility API`}},
		{"visibility Service not a name", header + "visibility:\n  serviceName: Muster_Vis\n",
			[]string{`visibility.serviceName: "Muster_Vis": must be a Service name`}},
		{"same address twice", header + "metricsAddr: :9000\nhealthAddr: :9000\n",
			[]string{`healthAddr: ":9000": must differ from metricsAddr`}},
		{"every problem reported", header + "groupDefaults:\n  maxRetries: -2\n  startTimeout: 0s\nschedulerName: A\n",
			[]string{"groupDefaults.maxRetries: -2", "groupDefaults.startTimeout: 0s", `schedulerName: "A"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfiguration([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("ParseConfiguration succeeded with %+v, want an error containing %q", got, tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestValidateReportsFieldErrors(t *testing.T) {
	c := &Configuration{} // not defaulted: every defaulted field is missing
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate of an empty Configuration succeeded, want errors")
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("Validate error %v holds no *FieldError", err)
	}
	for _, want := range []string{
		`apiVersion: "": expected "muster.dev/v1alpha1"`,
		`kind: "": expected "Configuration"`,
		`schedulerName: "": must be a DNS-1123 subdomain`,
		"groupDefaults.startTimeout: must be set",
		"groupDefaults.backoffMax: must be set",
		"starvationThreshold: must be set",
		"preemptionSlack: must be set",
		"leaderElection.enabled: must be set",
		`metricsAddr: "": expected host:port`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if err := DefaultConfiguration().Validate(); err != nil {
		t.Errorf("DefaultConfiguration().Validate() = %v, want nil", err)
	}
}

func TestLoadConfiguration(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "muster.yaml")
	if err := os.WriteFile(good, []byte(header+"schedulerName: gang\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfiguration(good)
	if err != nil {
		t.Fatalf("LoadConfiguration(%s) error: %v", good, err)
	}
	if c.SchedulerName != "gang" || c.DefaultQueue != DefaultQueueName {
		t.Errorf("got schedulerName %q defaultQueue %q, want %q %q", c.SchedulerName, c.DefaultQueue, "gang", DefaultQueueName)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(header+"groupDefaults:\n  maxRetries: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfiguration(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "groupDefaults.maxRetries: -1: must be >= 0") {
		t.Errorf("LoadConfiguration(%s) error = %v, want one naming the file and the field", bad, err)
	}

	_, err = LoadConfiguration(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadConfiguration of a missing file: error %v, want fs.ErrNotExist", err)
	}
}

func TestSchedulerNames(t *testing.T) {
	c := DefaultConfiguration()
	c.AdditionalSchedulerNames = []string{"scheduler-plugins-scheduler"}
	if got, want := c.SchedulerNames(), []string{"muster", "scheduler-plugins-scheduler"}; !slices.Equal(got, want) {
		t.Errorf("SchedulerNames() = %q, want %q", got, want)
	}
	for name, want := range map[string]bool{"muster": true, "scheduler-plugins-scheduler": true, "volcano": false, "": false} {
		if got := c.Schedules(name); got != want {
			t.Errorf("Schedules(%q) = %v, want %v", name, got, want)
		}
	}
}
