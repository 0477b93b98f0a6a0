package upstreamtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/component-base/configz"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// schedulerName is the name of the upstream scheduler's one profile.
const schedulerName = "upstream"

func TestMain(m *testing.M) {
	c, err := sandbox.DRACluster(4, 8, 2)
	if err != nil {
		panic(err)
	}
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{Cluster: c}))
}

// startScheduler runs kube-scheduler v1.37 in-process against env until the test ends,
// with one profile named schedulerName (so that it schedules only the test's pods).
func startScheduler(t *testing.T, env *sandboxtest.Env) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.Sandbox.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	data := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: %q, qps: 500, burst: 1000}
profiles:
- schedulerName: %s
`, kubeconfig, schedulerName)
	if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := scheduleroptions.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, set := range opts.Flags.FlagSets {
		fs.AddFlagSet(set)
	}
	if err := fs.Parse([]string{"--config=" + config, "--secure-port=0"}); err != nil {
		t.Fatal(err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		t.Fatal(err)
	}
	configz.Delete("componentconfig")
	// Its logs go where the sandbox's go: klog is process-wide.
	ctx, cancel := context.WithCancel(context.Background())
	cc, sched, err := schedulerapp.Setup(ctx, opts)
	if err != nil {
		cancel()
		t.Fatalf("setting up kube-scheduler: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = schedulerapp.Run(ctx, cc, sched) // returns an error once ctx ends
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
