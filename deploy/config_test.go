package deploy

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// TestManagerConfigurationParses checks that the Configuration the kustomization ships
// is valid and sets the client limits a deployed muster needs.
func TestManagerConfigurationParses(t *testing.T) {
	data, err := os.ReadFile("manager/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("manager/config.yaml: %v", err)
	}
	cfg, err := musterv1alpha1.ParseConfiguration([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatalf("manager/config.yaml's config.yaml: %v", err)
	}
	want := musterv1alpha1.DefaultConfiguration().ClientConnection
	if diff := cmp.Diff(want, cfg.ClientConnection); diff != "" {
		t.Errorf("shipped clientConnection differs from the defaults (-want +got):\n%s", diff)
	}
}
