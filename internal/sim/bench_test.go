package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/trace"
)

// sharedPhilly reads the first n jobs of ../shared/traces/philly.csv (relative to the
// repository root), failing if the file is missing.
func sharedPhilly(tb testing.TB, n int) []trace.Job {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if parent := filepath.Dir(dir); parent != dir {
			dir = parent
			continue
		}
		tb.Fatal("repository root (go.mod) not found above the test's directory")
	}
	jobs, err := trace.LoadPhilly(filepath.Join(dir, "..", "shared", "traces", "philly.csv"))
	if err != nil {
		tb.Fatalf("%v (the README's setup puts the traces at ../shared/traces relative to the repository root)", err)
	}
	return jobs[:min(n, len(jobs))]
}

var sliceConfig = ReplayConfig{Cluster: Cluster{Nodes: 16, GPUsPerNode: 8}, ReadyAfter: 30 * time.Second, Seed: 1, Horizon: 60 * 24 * time.Hour}

// TestReplaySharedSlice replays the first 300 jobs of the Philly trace on a small cluster
// under every policy: every job finishes, and muster holds nothing in incomplete groups.
func TestReplaySharedSlice(t *testing.T) {
	jobs := sharedPhilly(t, 300)
	for name, sched := range map[string]Scheduler{
		"pod-by-pod": NewPodByPod(), "permit-wait": NewPermitWait(time.Minute, 10*time.Second), "muster": NewEngine(),
	} {
		s := Summarise(name, Replay(jobs, sched, sliceConfig), sliceConfig.Cluster.GPUs())
		if s.Finished != len(jobs) {
			t.Errorf("%s: %d of %d jobs finished", name, s.Finished, len(jobs))
		}
		if name == "muster" && (s.HeldGPUHours != 0 || len(s.Stalls) != 0) {
			t.Errorf("muster: %.2f GPU-hours held by incomplete groups and %d deadlock episodes, want none", s.HeldGPUHours, len(s.Stalls))
		}
		if s.Queueing.N != len(jobs) || s.Utilisation <= 0 || s.Utilisation > 1 {
			t.Errorf("%s: %d queueing delays for %d jobs, utilisation %.3f; want one per job and a fraction in (0, 1]", name, s.Queueing.N, len(jobs), s.Utilisation)
		}
	}
}

// BenchmarkReplay replays the first 10,000 jobs of the Philly trace on 128 nodes of 8 GPUs
// at load 3, once per policy; profile it with -cpuprofile.
func BenchmarkReplay(b *testing.B) {
	jobs := sharedPhilly(b, 10000)
	cfg := sliceConfig
	cfg.Cluster, cfg.Load = Cluster{Nodes: 128, GPUsPerNode: 8}, 3
	for _, p := range []struct {
		name string
		new  func() Scheduler
	}{
		{"pod-by-pod", func() Scheduler { return NewPodByPod() }},
		{"permit-wait", func() Scheduler { return NewPermitWait(time.Minute, 10*time.Second) }},
		{"muster", func() Scheduler { return NewEngine() }},
	} {
		b.Run(p.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Replay(jobs, p.new(), cfg)
			}
		})
	}
}
