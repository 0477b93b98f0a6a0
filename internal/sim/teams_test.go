package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/trace"
)

// teamTrace is a three-job trace of two teams on a 2×8-GPU cluster: team a's job of 16
// GPUs at 0, team b's job of 4 GPUs at 1m and its job of 4 GPUs for 40 minutes at 30m.
// By GPU time team a gets 7 GPUs of quota and team b 9.
func teamTrace() []trace.Job {
	t0 := time.Date(2017, 10, 1, 0, 0, 0, 0, time.UTC)
	job := func(at time.Duration, gpus int, d time.Duration, vc string) trace.Job {
		return trace.Job{Submit: t0.Add(at), Duration: d, GPUs: gpus, GPUTime: float64(gpus) * d.Seconds(), Cluster: vc}
	}
	return []trace.Job{
		job(0, 16, 10*time.Minute, "a"),
		job(time.Minute, 4, 10*time.Minute, "b"),
		job(30*time.Minute, 4, 40*time.Minute, "b"),
	}
}

func TestTeamQueues(t *testing.T) {
	got := TeamQueues(teamTrace(), Cluster{Nodes: 2, GPUsPerNode: 8}, true)
	want := []engine.Queue{
		{Queue: queue.Queue{Name: "vc-a", Quota: cluster.Resources{GPU: 7}, Cohort: TeamCohort}},
		{Queue: queue.Queue{Name: "vc-b", Quota: cluster.Resources{GPU: 9}, Cohort: TeamCohort}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("TeamQueues (-want +got):\n%s", d)
	}
}

// TestTeamsShareThroughACohort: held to its 7 GPUs, team a's 16-GPU job never runs. In a
// cohort it borrows team b's idle quota at once; at 1m team b's job, within its own
// quota, takes the quota back: team a's job is evicted whole, waits for b's job, runs
// again from the start and finishes before b's long job comes.
func TestTeamsShareThroughACohort(t *testing.T) {
	cfg := handConfig
	cfg.Teams, cfg.Horizon = true, 2*time.Hour
	for _, tc := range []struct {
		name     string
		cohort   bool
		finished string
		evicted  int
	}{
		{"quota", false, "j000000 unfinished, j000001 finished at 11m, j000002 finished at 1h10m", 0},
		{"cohort", true, "j000000 finished at 21m, j000001 finished at 11m, j000002 finished at 1h10m", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := teamTrace()
			w := Replay(jobs, NewTeamsEngine(TeamQueues(jobs, cfg.Cluster, tc.cohort)), cfg)
			if got := w.Summary(); got != tc.finished {
				t.Errorf("got %s\nwant %s", got, tc.finished)
			}
			if got := Summarise(tc.name, w, cfg.Cluster.GPUs()).Evicted; got != tc.evicted {
				t.Errorf("pods evicted: got %d, want %d", got, tc.evicted)
			}
		})
	}
}
