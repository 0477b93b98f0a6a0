// Package metrics exposes muster's Prometheus metrics: the three measurements the guide
// asks for (time until minMember members are Ready, resource-seconds held before that,
// cleanup time after a failure), queue wait and depth, and decision counts and latency.
// The values come from the engine's Output and Status; this package only records them.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// durationBuckets spans a second to six hours: gang start-up and queue waits.
var durationBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600}

// Metrics holds muster's collectors.
type Metrics struct {
	TimeToReady   prometheus.Histogram
	HeldResource  *prometheus.CounterVec
	Cleanup       prometheus.Histogram
	QueueWait     prometheus.Histogram
	QueueGroups   *prometheus.GaugeVec
	QueueUsed     *prometheus.GaugeVec
	QueueBorrowed *prometheus.GaugeVec
	// ExpectedStart is each queued group's expected start, as a Unix time, for the
	// groups that have one; StartUnknown counts, per queue, the queued groups that do
	// not (their status says why).
	ExpectedStart    *prometheus.GaugeVec
	StartUnknown     *prometheus.GaugeVec
	Decisions        *prometheus.CounterVec
	DecisionDuration prometheus.Histogram
	Evictions        *prometheus.CounterVec
	Retries          prometheus.Counter
	// Untrusted counts the records and plans muster read back and ignored, by kind
	// (record, plan) and reason (Unsigned, BadSignature, WrongCarrier, ...).
	Untrusted *prometheus.CounterVec
	// StatusNotWritten counts the group status writes the API server refused for a
	// reason that retrying does not mend, by the API's reason (Invalid,
	// RequestEntityTooLarge, ...).
	StatusNotWritten *prometheus.CounterVec
	// TrackedGroups is how many groups the controller keeps per-group state for: it
	// falls back to the live groups once deleted groups are forgotten.
	TrackedGroups prometheus.Gauge
	// EventsDropped counts the Events muster made beyond its Event budget and did not
	// write, by reason.
	EventsDropped *prometheus.CounterVec
	// PodScheduledWrites counts the PodScheduled=False writes on pending members sent
	// to the API server, by result (written, conflict, failed).
	PodScheduledWrites *prometheus.CounterVec
	// PodScheduledDropped counts the queued PodScheduled writes not sent, by reason
	// (superseded, bound, gone, unchanged).
	PodScheduledDropped *prometheus.CounterVec
	// PodScheduledThrottled counts the PodScheduled writes that waited for the write
	// budget.
	PodScheduledThrottled prometheus.Counter
}

// New creates the collectors and registers them with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		TimeToReady: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "muster_group_time_to_ready_seconds",
			Help:    "Time from a group's admission to minMember members Ready, for the attempt that became Ready.",
			Buckets: durationBuckets,
		}),
		HeldResource: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "muster_group_held_resource_seconds_total",
			Help: "Resource-seconds that groups held on nodes before they became Ready, including groups evicted before Ready (GPUs, CPU cores, bytes).",
		}, []string{"resource"}),
		Cleanup: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "muster_group_cleanup_seconds",
			Help:    "Time from a group's failure, eviction or cancellation until no member is bound.",
			Buckets: durationBuckets,
		}),
		QueueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "muster_queue_wait_seconds",
			Help:    "Time from a group's (re)queueing to its admission.",
			Buckets: durationBuckets,
		}),
		QueueGroups: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "muster_queue_groups",
			Help: "Groups per queue and lifecycle phase.",
		}, []string{"queue", "state"}),
		QueueUsed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "muster_queue_used",
			Help: "What the groups admitted through each queue hold, per resource (GPUs, CPU cores, bytes).",
		}, []string{"queue", "resource"}),
		QueueBorrowed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "muster_queue_borrowed",
			Help: "What each queue of a cohort holds beyond its quota, on quota lent by the others, per resource (GPUs, CPU cores, bytes).",
		}, []string{"queue", "resource"}),
		ExpectedStart: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "muster_group_expected_start_timestamp_seconds",
			Help: "When each queued group is expected to start (Unix time), from muster's forecast of its queue; groups without one are counted in muster_queue_expected_start_unknown.",
		}, []string{"queue", "group"}),
		StartUnknown: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "muster_queue_expected_start_unknown",
			Help: "Queued groups per queue whose expected start is unknown; their status says why (expectedStartUnknown).",
		}, []string{"queue"}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "muster_scheduling_decisions_total",
			Help: "Admission decisions by result: admitted, unschedulable, impossible, quota, queue-not-found, reserved, preempting, reclaiming.",
		}, []string{"result"}),
		DecisionDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "muster_scheduling_decision_duration_seconds",
			Help:    "Wall time of one engine Step: every admission decision it made and the binds it planned.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		Evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "muster_evictions_total",
			Help: "Member pods evicted, by reason (StartTimeout, RecoveryTimeout, RetryLimitExceeded, Cancelled).",
		}, []string{"reason"}),
		Retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "muster_group_retries_total",
			Help: "Groups requeued after a failed attempt.",
		}),
		Untrusted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "muster_untrusted_records_total",
			Help: "Recreate records and plans muster read back, failed to verify and ignored, by kind and reason.",
		}, []string{"kind", "reason"}),
		StatusNotWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "muster_status_not_written_total",
			Help: "Group status writes refused for a permanent reason and not retried until the group's state changes, by reason.",
		}, []string{"reason"}),
		TrackedGroups: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "muster_tracked_groups",
			Help: "Groups the controller keeps per-group state for (status and record written, conditions, owner, rechecks); deleted groups leave it once the engine drops them.",
		}),
		EventsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "muster_events_dropped_total",
			Help: "Events not written because muster made them faster than its Event budget (10 a second, bursts of 50), by reason.",
		}, []string{"reason"}),
	}
	m.PodScheduledWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "muster_pod_scheduled_writes_total",
		Help: "PodScheduled=False writes on pending members of waiting groups sent to the API server, by result (written, conflict, failed).",
	}, []string{"result"})
	m.PodScheduledDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "muster_pod_scheduled_dropped_total",
		Help: "Queued PodScheduled writes not sent, by reason: superseded by a newer condition, pod bound or gone meanwhile, or carrying the condition already.",
	}, []string{"reason"})
	m.PodScheduledThrottled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "muster_pod_scheduled_throttled_total",
		Help: "PodScheduled writes that waited for the write budget (20 per second, bursts of 100).",
	})
	reg.MustRegister(m.TimeToReady, m.HeldResource, m.Cleanup, m.QueueWait, m.QueueGroups, m.QueueUsed, m.QueueBorrowed,
		m.ExpectedStart, m.StartUnknown,
		m.Decisions, m.DecisionDuration, m.Evictions, m.Retries, m.Untrusted, m.StatusNotWritten,
		m.TrackedGroups, m.EventsDropped, m.PodScheduledWrites, m.PodScheduledDropped, m.PodScheduledThrottled)
	return m
}

// Record adds one engine Step's output, which took took of wall time.
func (m *Metrics) Record(out engine.Output, took time.Duration) {
	m.DecisionDuration.Observe(took.Seconds())
	for result, n := range out.Decisions {
		m.Decisions.WithLabelValues(result).Add(float64(n))
	}
	for _, a := range out.Admitted {
		m.QueueWait.Observe(a.Waited.Seconds())
	}
	for _, r := range out.Ready {
		m.TimeToReady.Observe(r.After.Seconds())
	}
	for name, v := range out.HeldBeforeReady {
		m.HeldResource.WithLabelValues(string(name)).Add(v)
	}
	for _, r := range out.Released {
		m.Cleanup.Observe(r.After.Seconds())
	}
	for _, ev := range out.Evictions {
		m.Evictions.WithLabelValues(ev.Reason).Inc()
	}
	for _, ev := range out.Events {
		if ev.Reason == lifecycle.ReasonBackoffExpired {
			m.Retries.Inc()
		}
	}
}

// SetQueues replaces the per-queue, per-phase group counts and the queues' usage with
// the engine's current ones.
func (m *Metrics) SetQueues(e *engine.Engine) {
	m.QueueUsed.Reset()
	m.QueueBorrowed.Reset()
	for _, q := range e.Queues() {
		for name, v := range q.Used {
			m.QueueUsed.WithLabelValues(q.Name, string(name)).Set(amount(name, v))
		}
		for name, v := range q.Borrowed() {
			m.QueueBorrowed.WithLabelValues(q.Name, string(name)).Set(amount(name, v))
		}
	}
	m.QueueGroups.Reset()
	m.ExpectedStart.Reset()
	m.StartUnknown.Reset()
	for _, key := range e.Groups() {
		st, ok := e.Brief(key)
		if !ok {
			continue
		}
		if st.Phase == lifecycle.Queued {
			if st.ExpectedStart.IsZero() {
				m.StartUnknown.WithLabelValues(st.Queue).Inc()
			} else {
				m.ExpectedStart.WithLabelValues(st.Queue, st.Namespace+"/"+st.Name).Set(float64(st.ExpectedStart.Unix()))
			}
		}
		state := string(st.Phase)
		if state == "" {
			state = "Pending"
			if st.Invalid != "" {
				state = "Invalid"
			}
		}
		m.QueueGroups.WithLabelValues(st.Queue, state).Inc()
	}
}

// amount renders a canonical amount in the resource's unit: cores, bytes, devices.
func amount(name corev1.ResourceName, v int64) float64 {
	q := cluster.Quantity(name, v)
	return q.AsApproximateFloat64()
}
