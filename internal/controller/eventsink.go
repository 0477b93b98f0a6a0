package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
)

// eventQPS and eventBurst bound the Events muster writes per second. Events are
// best-effort notes for people; binds and status are what schedules. A burst of
// admissions makes one Admitted Event per group at the moment its pods are bound, and
// written at once those Events competed with the binds and the pods' creation for the
// API server (in `muster bench` throughput, 550 Event writes before the last bind).
// Their own rate-limited client spreads them out: up to the broadcaster's queue of
// 1,000 wait their turn, and client-go drops further ones, as it does for any Event
// sink that falls behind.
const (
	eventQPS   = 10
	eventBurst = 50
)

// eventRecorder returns a recorder whose Events go through their own client, limited
// to eventQPS, and the broadcaster that must be started to write them.
func eventRecorder(cfg *rest.Config, scheme *runtime.Scheme) (events.EventRecorderLogger, events.EventBroadcaster, error) {
	c := builtinConfig(cfg)
	c.QPS, c.Burst, c.RateLimiter = eventQPS, eventBurst, nil
	kube, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, nil, err
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	return b.NewRecorder(scheme, "muster"), b, nil
}
