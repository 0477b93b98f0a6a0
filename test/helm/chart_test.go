package helm

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

const (
	queueCRD  = "CustomResourceDefinition//queues.muster.dev"
	spCRD     = "CustomResourceDefinition//podgroups.scheduling.x-k8s.io"
	volcCRD   = "CustomResourceDefinition//podgroups.scheduling.volcano.sh"
	smKey     = "ServiceMonitor/muster-system/muster"
	pdbKey    = "PodDisruptionBudget/muster-system/muster"
	deployKey = "Deployment/muster-system/muster"
	configKey = "ConfigMap/muster-system/muster-config"
)

func TestSwitches(t *testing.T) {
	for _, tc := range []struct {
		name         string
		set          []string
		want, absent []string
	}{
		{"defaults", nil, []string{queueCRD, spCRD, volcCRD, pdbKey, "FlowSchema//muster", "FlowSchema//muster-leader-election",
			"PriorityLevelConfiguration//muster", "Service/muster-system/muster-metrics"}, []string{smKey}},
		{"an existing Volcano", []string{"crds.volcano=false"}, []string{queueCRD, spCRD}, []string{volcCRD}},
		{"an existing scheduler-plugins", []string{"crds.schedulerPlugins=false"}, []string{queueCRD, volcCRD}, []string{spCRD}},
		{"prometheus-operator", []string{"serviceMonitor.enabled=true"}, []string{smKey}, nil},
		{"one replica needs no PDB", []string{"replicas=1"}, []string{deployKey}, []string{pdbKey}},
		{"no flow control", []string{"flowControl.enabled=false"}, nil, []string{"FlowSchema//muster", "PriorityLevelConfiguration//muster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := mustRender(t, tc.set...)
			for _, k := range tc.want {
				if objs[k] == nil {
					t.Errorf("%s missing", k)
				}
			}
			for _, k := range tc.absent {
				if objs[k] != nil {
					t.Errorf("%s rendered, want none", k)
				}
			}
		})
	}
	if _, err := render(t, "replicas=2", "config.leaderElection.enabled=false"); err == nil ||
		!strings.Contains(err.Error(), "replicas > 1 needs config.leaderElection.enabled") {
		t.Errorf("two replicas without leader election: error %v, want one naming config.leaderElection.enabled", err)
	}
}

// TestConfigurationValues checks that the Configuration is the values' and that a
// change of it changes the pods' checksum annotation, so that it rolls them.
func TestConfigurationValues(t *testing.T) {
	def := mustRender(t)
	cfg := configuration(t, def[configKey])
	if !*cfg.LeaderElection.Enabled || cfg.LeaderElection.LeaseNamespace != "muster-system" || cfg.ClientConnection.QPS != 1000 {
		t.Errorf("default Configuration: leader election %v in %q, qps %v; want on, muster-system, 1000",
			*cfg.LeaderElection.Enabled, cfg.LeaderElection.LeaseNamespace, cfg.ClientConnection.QPS)
	}
	changed := mustRender(t, "config.clientConnection.qps=50", "config.preemption=Never",
		"config.additionalSchedulerNames={scheduler-plugins-scheduler}") // as docs/integrations.md says for KubeRay
	cfg = configuration(t, changed[configKey])
	if cfg.ClientConnection.QPS != 50 || cfg.Preemption != musterv1alpha1.PreemptNever ||
		!slices.Equal(cfg.SchedulerNames(), []string{"muster", "scheduler-plugins-scheduler"}) {
		t.Errorf("--set qps=50, preemption=Never, additionalSchedulerNames: got qps %v, preemption %q, schedulerNames %q",
			cfg.ClientConnection.QPS, cfg.Preemption, cfg.SchedulerNames())
	}
	before, after := checksum(t, def[deployKey]), checksum(t, changed[deployKey])
	if before == "" || before == after {
		t.Errorf("checksum/config %q before and %q after a change of the Configuration; want two different sums", before, after)
	}
}

// TestSecurityContext checks what the issue asks of the pods.
func TestSecurityContext(t *testing.T) {
	d := mustRender(t)[deployKey]
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"spec", "replicas"}, float64(2)}, // the YAML decoder gives JSON numbers
		{[]string{"spec", "template", "spec", "priorityClassName"}, "system-cluster-critical"},
		{[]string{"spec", "template", "spec", "securityContext", "runAsNonRoot"}, true},
		{[]string{"spec", "template", "spec", "securityContext", "runAsUser"}, float64(65532)},
		{[]string{"spec", "template", "spec", "securityContext", "seccompProfile", "type"}, "RuntimeDefault"},
	} {
		got, _, _ := unstructured.NestedFieldNoCopy(d.Object, c.path...)
		if got != c.want {
			t.Errorf("%s = %v (%T), want %v", strings.Join(c.path, "."), got, got, c.want)
		}
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("%d containers, want 1", len(containers))
	}
	sc, _, _ := unstructured.NestedMap(containers[0].(map[string]any), "securityContext")
	if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false || sc["privileged"] != false {
		t.Errorf("container securityContext %v, want a read-only root filesystem, no privilege escalation, not privileged", sc)
	}
	if _, ok := containers[0].(map[string]any)["resources"].(map[string]any)["requests"]; !ok {
		t.Error("container has no resource requests")
	}
}

// configuration parses the Configuration in the chart's ConfigMap as muster does.
func configuration(t *testing.T, cm *unstructured.Unstructured) *musterv1alpha1.Configuration {
	t.Helper()
	if cm == nil {
		t.Fatal("no muster-config ConfigMap")
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	cfg, err := musterv1alpha1.ParseConfiguration([]byte(data))
	if err != nil {
		t.Fatalf("the chart's Configuration: %v\n%s", err, data)
	}
	return cfg
}

// checksum returns the Deployment's pod template checksum/config annotation.
func checksum(t *testing.T, d *unstructured.Unstructured) string {
	t.Helper()
	sum, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", "checksum/config")
	return sum
}
