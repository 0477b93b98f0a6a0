package deploy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// TestManagerConfigurationParses checks that the Configuration the kustomization ships
// is valid and sets the client limits a deployed muster needs.
func TestManagerConfigurationParses(t *testing.T) {
	cfg, err := ParsedConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	want := musterv1alpha1.DefaultConfiguration().ClientConnection
	if diff := cmp.Diff(want, cfg.ClientConnection); diff != "" {
		t.Errorf("shipped clientConnection differs from the defaults (-want +got):\n%s", diff)
	}
}
