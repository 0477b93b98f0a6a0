package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/metrics"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// recording passes each engine Step's output to the metrics.
type recording struct {
	*engine.Engine
	m *metrics.Metrics
}

func (r recording) Step(now time.Time) engine.Output {
	out := r.Engine.Step(now)
	r.m.Record(out, time.Millisecond)
	return out
}

func world(t *testing.T, policy lifecycle.Policy) (*sim.World, *metrics.Metrics, *engine.Engine) {
	t.Helper()
	m := metrics.New(prometheus.NewRegistry())
	e := engine.New(engine.Config{DefaultQueue: "default", Policy: policy, StarvationThreshold: time.Hour})
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default"}})
	w := sim.New(recording{Engine: e, m: m})
	for _, n := range gt.Nodes("n", 8, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1) }) {
		w.AddNode(n)
	}
	return w, m, e
}

func TestTwoJobs(t *testing.T) {
	w, m, e := world(t, lifecycle.DefaultPolicy())
	w.Submit(&sim.Job{Name: "a", Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second})
	w.Submit(&sim.Job{Name: "b", Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second})
	w.RunFor(5 * time.Minute)
	// Only a holds GPUs before Ready: 8 GPUs for 30 s. b waits holding nothing.
	if got := testutil.ToFloat64(m.HeldResource.WithLabelValues("nvidia.com/gpu")); got != 240 {
		t.Errorf("held GPU-seconds = %v, want 240", got)
	}
	m.SetQueues(e)
	want := `
# HELP muster_queue_groups Groups per queue and lifecycle phase.
# TYPE muster_queue_groups gauge
muster_queue_groups{queue="default",state="Queued"} 1
muster_queue_groups{queue="default",state="Running"} 1
`
	if err := testutil.CollectAndCompare(m.QueueGroups, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	w.RunFor(20 * time.Minute)
	if got := testutil.ToFloat64(m.HeldResource.WithLabelValues("nvidia.com/gpu")); got != 480 {
		t.Errorf("held GPU-seconds after both ran = %v, want 480", got)
	}
	if n, sum := observed(t, m.TimeToReady); n != 2 || sum != 60 {
		t.Errorf("time to ready: %d observations summing to %vs, want 2 of 30s", n, sum)
	}
	if n, sum := observed(t, m.QueueWait); n != 2 || sum != 630 {
		t.Errorf("queue wait: %d observations summing to %vs, want 0s and 630s", n, sum)
	}
	wantDecisions := `
# HELP muster_scheduling_decisions_total Admission decisions by result: admitted, unschedulable, impossible, quota, queue-not-found, reserved, preempting, reclaiming.
# TYPE muster_scheduling_decisions_total counter
muster_scheduling_decisions_total{result="admitted"} 2
muster_scheduling_decisions_total{result="unschedulable"} 1
`
	if err := testutil.CollectAndCompare(m.Decisions, strings.NewReader(wantDecisions)); err != nil {
		t.Error(err)
	}
}

// TestWorkerNeverReady: a group whose worker never becomes Ready is evicted at each
// start-timeout; held GPU-seconds count every attempt until its eviction.
func TestWorkerNeverReady(t *testing.T) {
	p := lifecycle.DefaultPolicy()
	p.StartTimeout, p.MaxRetries, p.BackoffBase = 2*time.Minute, 1, 30*time.Second
	w, m, _ := world(t, p)
	w.Submit(&sim.Job{Name: "broken", Workers: 4, GPU: 1, FailInit: []int{3}, RunFor: time.Hour, ReadyAfter: 30 * time.Second})
	w.RunFor(10 * time.Minute)
	// Two attempts, each holding 4 GPUs for the 2-minute start-timeout.
	if got := testutil.ToFloat64(m.HeldResource.WithLabelValues("nvidia.com/gpu")); got != 2*4*120 {
		t.Errorf("held GPU-seconds = %v, want %d", got, 2*4*120)
	}
	if got := testutil.ToFloat64(m.Evictions.WithLabelValues(lifecycle.ReasonStartTimeout)); got != 4 {
		t.Errorf("StartTimeout evictions = %v, want 4", got)
	}
	if got := testutil.ToFloat64(m.Evictions.WithLabelValues(lifecycle.ReasonRetryLimitExceeded)); got != 4 {
		t.Errorf("RetryLimitExceeded evictions = %v, want 4", got)
	}
	if got := testutil.ToFloat64(m.Retries); got != 1 {
		t.Errorf("retries = %v, want 1", got)
	}
	// The simulated job controller deletes evicted pods at once: two cleanups of 0s.
	if n, sum := observed(t, m.Cleanup); n != 2 || sum != 0 {
		t.Errorf("cleanup: %d observations summing to %vs, want 2 of 0s", n, sum)
	}
}

// observed returns a histogram's sample count and sum.
func observed(t *testing.T, h prometheus.Histogram) (uint64, float64) {
	t.Helper()
	var pb dto.Metric
	if err := h.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetHistogram().GetSampleCount(), pb.GetHistogram().GetSampleSum()
}

// TestQueueUsage: a job of team-a runs on 6 GPUs, 2 of them lent by team-b through their
// cohort; the gauges show what each queue holds and what team-a borrows.
func TestQueueUsage(t *testing.T) {
	w, m, e := world(t, lifecycle.DefaultPolicy())
	for _, q := range []string{"team-a", "team-b"} {
		e.SetQueue(engine.Queue{Queue: queue.Queue{Name: q, Quota: cluster.Resources{gt.GPU: 4}, Cohort: "research"}})
	}
	w.Submit(&sim.Job{Name: "big", Workers: 6, GPU: 1, Queue: "team-a", RunFor: time.Hour, ReadyAfter: 30 * time.Second})
	w.RunFor(time.Minute)
	m.SetQueues(e)
	borrowed := `
# HELP muster_queue_borrowed What each queue of a cohort holds beyond its quota, on quota lent by the others, per resource (GPUs, CPU cores, bytes).
# TYPE muster_queue_borrowed gauge
muster_queue_borrowed{queue="team-a",resource="nvidia.com/gpu"} 2
`
	used := `
# HELP muster_queue_used What the groups admitted through each queue hold, per resource (GPUs, CPU cores, bytes).
# TYPE muster_queue_used gauge
muster_queue_used{queue="team-a",resource="nvidia.com/gpu"} 6
`
	for _, c := range []struct {
		gauge *prometheus.GaugeVec
		want  string
	}{{m.QueueBorrowed, borrowed}, {m.QueueUsed, used}} {
		if err := testutil.CollectAndCompare(c.gauge, strings.NewReader(c.want)); err != nil {
			t.Error(err)
		}
	}
}

// TestExpectedStart: a runs and declares 10 minutes; b, queued behind it, gets the
// expected start of the forecast, when a is expected to end, and no queued group is
// counted without one. Before a declares anything, b's start is unknown and counted.
func TestExpectedStart(t *testing.T) {
	for _, declared := range []time.Duration{10 * time.Minute, 0} {
		w, m, e := world(t, lifecycle.DefaultPolicy())
		w.Submit(&sim.Job{Name: "a", Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second, Declared: declared})
		w.Submit(&sim.Job{Name: "b", Workers: 8, GPU: 1, RunFor: 10 * time.Minute, ReadyAfter: 30 * time.Second, Declared: declared})
		w.RunFor(5 * time.Minute)
		m.SetQueues(e)
		b := w.Job("b").GroupKey()
		st, _ := e.Group(b)
		unknown := testutil.ToFloat64(m.StartUnknown.WithLabelValues("default"))
		got := testutil.ToFloat64(m.ExpectedStart.WithLabelValues("default", st.Spec.Namespace+"/"+st.Spec.Name))
		if declared == 0 {
			if unknown != 1 || st.ExpectedStartUnknown == "" {
				t.Errorf("nothing declared: %v groups counted without an expected start, b's reason %q; want 1, with a reason", unknown, st.ExpectedStartUnknown)
			}
			continue
		}
		// a runs from its members' Ready; a forecast that moves by a minute or less is
		// not reported (engine.movedStart).
		want := w.Job("a").Ready.Add(declared)
		if unknown != 0 || st.ExpectedStart.IsZero() || st.ExpectedStart.Sub(want).Abs() > time.Minute || got != float64(st.ExpectedStart.Unix()) {
			t.Errorf("b: expected start %v (%q), metric %v, %v without one; want within a minute of %v, the metric its Unix time, none without",
				st.ExpectedStart, st.ExpectedStartUnknown, got, unknown, want)
		}
	}
}
