package sim

import (
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/trace"
)

// shippedPhilly returns the first n jobs of the Philly trace shipped with muster.
func shippedPhilly(tb testing.TB, n int) []trace.Job {
	tb.Helper()
	jobs, err := trace.Philly()
	if err != nil {
		tb.Fatal(err)
	}
	return jobs[:min(n, len(jobs))]
}

var sliceConfig = ReplayConfig{Cluster: Cluster{Nodes: 16, GPUsPerNode: 8}, ReadyAfter: 30 * time.Second, Seed: 1, Horizon: 60 * 24 * time.Hour}

// TestReplaySharedSlice replays the first 300 jobs of the Philly trace on a small cluster
// under every policy: every job finishes, and muster holds nothing in incomplete groups.
func TestReplaySharedSlice(t *testing.T) {
	jobs := shippedPhilly(t, 300)
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
	jobs := shippedPhilly(b, 10000)
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
