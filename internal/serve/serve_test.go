package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

func TestApplyClientConnection(t *testing.T) {
	rc := &rest.Config{Host: "https://example"}
	ApplyClientConnection(rc, musterv1alpha1.DefaultConfiguration().ClientConnection)
	if rc.QPS != 1000 || rc.Burst != 2000 || rc.ContentType != musterv1alpha1.ContentTypeProtobuf ||
		rc.AcceptContentTypes != musterv1alpha1.ContentTypeProtobuf+","+musterv1alpha1.ContentTypeJSON {
		t.Errorf("after the defaults: qps %v burst %d contentType %q accept %q; want 1000, 2000, protobuf, protobuf,json",
			rc.QPS, rc.Burst, rc.ContentType, rc.AcceptContentTypes)
	}
}

// TestServeRejectsBadConfiguration runs the command with a Configuration whose
// clientConnection is invalid and with a kubeconfig that names no cluster: it must stop
// at the Configuration, naming the field, before it reaches for a cluster.
func TestServeRejectsBadConfiguration(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: muster.dev/v1alpha1\nkind: Configuration\nclientConnection:\n  qps: -3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand()
	cmd.SetArgs([]string{"--config", cfg, "--kubeconfig", filepath.Join(dir, "missing")})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "clientConnection.qps: -3: must be > 0") {
		t.Errorf("serve with qps -3: error %v, want one naming clientConnection.qps", err)
	}
}

// TestTestClockIsHiddenAndLoopbackOnly: --test-clock-addr is not in the help, and an
// address other than a loopback IP is refused, naming the flag, before muster reaches
// for a cluster.
func TestTestClockIsHiddenAndLoopbackOnly(t *testing.T) {
	cmd := NewCommand()
	if f := cmd.Flags().Lookup(testClockFlag); f == nil || !f.Hidden {
		t.Fatalf("expected a hidden flag --%s, found %+v", testClockFlag, f)
	}
	if usage := cmd.UsageString(); strings.Contains(usage, testClockFlag) {
		t.Errorf("expected --%s out of the help, found it:\n%s", testClockFlag, usage)
	}
	dir := t.TempDir()
	for _, addr := range []string{"0.0.0.0:9999", ":9999", "localhost:9999", "192.0.2.1:9999"} {
		cmd := NewCommand()
		cmd.SetArgs([]string{"--" + testClockFlag, addr, "--kubeconfig", filepath.Join(dir, "missing")})
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "--"+testClockFlag) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("serve --%s %s: error %v; expected one naming the flag and a loopback address", testClockFlag, addr, err)
		}
	}
}
