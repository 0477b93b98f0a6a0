package sim

import (
	"math"
	"slices"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/trace"
)

// TeamCohort is the cohort of the team queues TeamQueues returns with a cohort.
const TeamCohort = "trace"

// TeamQueue names the queue of a trace's virtual cluster (its team).
func TeamQueue(vc string) string { return "vc-" + vc }

// TeamQueues returns a queue per virtual cluster of jobs, whose GPU quota is the
// cluster's GPUs times the virtual cluster's share of the trace's GPU time, rounded, and
// at least one GPU: the quotas a platform team would derive from past use. With cohort
// set the queues share TeamCohort, lending each other what they do not use; without,
// each team is held to its quota.
func TeamQueues(jobs []trace.Job, c Cluster, cohort bool) []engine.Queue {
	gpuTime := map[string]float64{}
	var total float64
	for _, j := range jobs {
		gpuTime[j.Cluster] += j.GPUTime
		total += j.GPUTime
	}
	var out []engine.Queue
	for vc, t := range gpuTime {
		quota := int64(1)
		if total > 0 {
			quota = max(1, int64(math.Round(float64(c.GPUs())*t/total)))
		}
		q := engine.Queue{Queue: queue.Queue{Name: TeamQueue(vc), Quota: cluster.Resources{GPU: quota}}}
		if cohort {
			q.Cohort = TeamCohort
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b engine.Queue) int { return compareStrings(a.Name, b.Name) })
	return out
}

// NewTeamsEngine returns muster's engine, as NewEngine, with queues.
func NewTeamsEngine(queues []engine.Queue) *engine.Engine {
	e := NewEngine()
	for _, q := range queues {
		e.SetQueue(q)
	}
	return e
}
