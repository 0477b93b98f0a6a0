package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/flowcontrol"
)

// statusQPS and statusBurst bound the status writes muster sends per second. Binding
// is what users wait for; status is written beside it, never ahead of it.
const (
	statusQPS   = 100
	statusBurst = 200
)

// maxHold bounds how long the writer holds status writes and Events back while binds
// are queued or in flight (see statusWriter.hold).
const maxHold = 2 * time.Second

// holdPoll is how often a held-back writer looks again whether binding is idle.
const holdPoll = 20 * time.Millisecond

// statusWriter sends group status writes in the background: the latest write per group
// (a newer one replaces a pending older one), at most statusQPS per second, so that a
// pass that admits hundreds of groups binds them without waiting on their conditions.
// It also records muster's Events. While binds are queued or in flight (busy), it
// holds both back, up to maxHold after the oldest was queued: they compete with the
// binds for the API server, and binding is what users wait for.
type statusWriter struct {
	log     logr.Logger
	limiter flowcontrol.RateLimiter
	busy    func() bool
	record  func(pendingEvent)

	mu      sync.Mutex
	pending map[string]groupWrite
	order   []string             // keys in the order they were first queued
	since   map[string]time.Time // when each pending key was first queued
	events  []pendingEvent
	wake    chan struct{}

	failed failures // keys whose last write failed, for the loop to write again
}

// pendingEvent is an Event waiting to be recorded.
type pendingEvent struct {
	obj                  runtime.Object
	typ, reason, message string
	queued               time.Time
}

// failures collects the keys of work that failed in the background, for the loop to
// take and do again. It is safe for concurrent use.
type failures struct {
	mu   sync.Mutex
	keys []string
}

func (f *failures) add(keys ...string) {
	f.mu.Lock()
	f.keys = append(f.keys, keys...)
	f.mu.Unlock()
}

// take returns the keys added since the last call.
func (f *failures) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.keys
	f.keys = nil
	return out
}

// newStatusWriter returns a writer that holds back while busy reports binding work and
// records Events with record.
func newStatusWriter(log logr.Logger, busy func() bool, record func(pendingEvent)) *statusWriter {
	return &statusWriter{
		log:     log,
		limiter: flowcontrol.NewTokenBucketRateLimiter(statusQPS, statusBurst),
		busy:    busy,
		record:  record,
		pending: map[string]groupWrite{},
		since:   map[string]time.Time{},
		wake:    make(chan struct{}, 1),
	}
}

// queueEvent queues an Event for recording.
func (w *statusWriter) queueEvent(ev pendingEvent) {
	ev.queued = time.Now()
	w.mu.Lock()
	w.events = append(w.events, ev)
	w.mu.Unlock()
	w.signal()
}

func (w *statusWriter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// hold returns how long to hold the pending writes and Events back: while binding is
// busy, until the oldest of them has waited maxHold; zero when nothing is pending.
func (w *statusWriter) hold(now time.Time) time.Duration {
	w.mu.Lock()
	oldest := time.Time{}
	if len(w.order) > 0 {
		oldest = w.since[w.order[0]]
	}
	if len(w.events) > 0 && (oldest.IsZero() || w.events[0].queued.Before(oldest)) {
		oldest = w.events[0].queued
	}
	w.mu.Unlock()
	if oldest.IsZero() || !w.busy() {
		return 0
	}
	if left := maxHold - now.Sub(oldest); left > 0 {
		return min(left, holdPoll)
	}
	return 0
}

// takeEvents returns the pending Events and forgets them.
func (w *statusWriter) takeEvents() []pendingEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.events
	w.events = nil
	return out
}

// queue replaces the pending write of w.key, if any, with w.
func (w *statusWriter) queue(gw groupWrite) {
	w.mu.Lock()
	if _, ok := w.pending[gw.key]; !ok {
		w.order = append(w.order, gw.key)
		w.since[gw.key] = time.Now()
	}
	w.pending[gw.key] = gw
	w.mu.Unlock()
	w.signal()
}

// takeFailed returns the keys whose writes failed since the last call.
func (w *statusWriter) takeFailed() []string { return w.failed.take() }

func (w *statusWriter) next() (groupWrite, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.order) == 0 {
		return groupWrite{}, false
	}
	key := w.order[0]
	w.order = slices.Delete(w.order, 0, 1)
	gw := w.pending[key]
	delete(w.pending, key)
	delete(w.since, key)
	return gw, true
}

// run records queued Events and sends queued writes until ctx is done.
func (w *statusWriter) run(ctx context.Context) {
	for {
		if d := w.hold(time.Now()); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
				continue
			}
		}
		for _, ev := range w.takeEvents() {
			w.record(ev)
		}
		gw, ok := w.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
				continue
			}
		}
		if err := w.limiter.Wait(ctx); err != nil {
			return
		}
		if err := gw.send(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			w.log.Error(err, "writing a group's status", "group", gw.key)
			w.failed.add(gw.key)
		}
	}
}
