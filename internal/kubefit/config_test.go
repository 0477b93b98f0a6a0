package kubefit

import (
	"testing"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// TestConfigurationPluginConfig: docs/configuration.md's placement example decodes as a
// Configuration and builds a Host whose NodeAffinity adds the rule to every pod.
func TestConfigurationPluginConfig(t *testing.T) {
	cfg, err := musterv1alpha1.ParseConfiguration([]byte(`
apiVersion: muster.dev/v1alpha1
kind: Configuration
placement:
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: node-pool, operator: In, values: [training]}
  - name: InterPodAffinity
    args:
      ignorePreferredTermsOfExistingPods: true
`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{PluginConfig: cfg.Placement.PluginConfig})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Always() {
		t.Fatal("addedAffinity: expected every pod judged by the plugins")
	}
}
