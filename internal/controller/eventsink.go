package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
)

// eventQPS and eventBurst bound the Events muster writes per second. Events are
// best-effort notes for people; binds and status are what schedules. A burst of
// admissions makes one Admitted Event per group at the moment its pods are bound (one
// per member pod for groups with no object), and written at once those Events
// competed with the binds and the pods' creation for the API server (in `muster
// bench` throughput, 550 Event writes before the last bind). Their own rate-limited
// client spreads them out, and limitedRecorder drops, before they reach client-go,
// the Events beyond the same budget.
const (
	eventQPS   = 10
	eventBurst = 50
)

// eventRecorder returns a recorder whose Events go through their own client, limited
// to eventQPS, and the broadcaster that must be started to write them.
func eventRecorder(cfg *rest.Config, scheme *runtime.Scheme) (events.EventRecorder, events.EventBroadcaster, error) {
	c := builtinConfig(cfg)
	c.QPS, c.Burst, c.RateLimiter = eventQPS, eventBurst, nil
	kube, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, nil, err
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	return b.NewRecorder(scheme, "muster"), b, nil
}

// limitedRecorder passes Events on while its limit has a token and drops the others,
// counting them by reason. client-go's events broadcaster starts a goroutine per
// Event, which waits for the client's rate limiter: Events made faster than eventQPS
// piled up there without bound. In a 10-minute create/delete soak on 1,000 nodes
// muster reached 9,500 goroutines at 4 minutes and its RSS grew by about 40 MiB a
// minute; dropping at the source keeps the waiting Events within the burst.
type limitedRecorder struct {
	next    events.EventRecorder
	limit   flowcontrol.PassiveRateLimiter
	dropped *prometheus.CounterVec
}

// limitEvents returns next behind a token bucket of eventQPS and eventBurst.
func limitEvents(next events.EventRecorder, dropped *prometheus.CounterVec) events.EventRecorder {
	return limitedRecorder{next: next, limit: flowcontrol.NewTokenBucketPassiveRateLimiter(eventQPS, eventBurst), dropped: dropped}
}

// Eventf records the Event if the limit allows it, and counts it dropped otherwise.
func (r limitedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if !r.limit.TryAccept() {
		r.dropped.WithLabelValues(reason).Inc()
		return
	}
	r.next.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
