package controller

import (
	"context"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
)

// statusQPS and statusBurst bound the status writes muster sends per second. Binding
// is what users wait for; status is written beside it, never ahead of it.
const (
	statusQPS   = 100
	statusBurst = 200
)

// statusWriter sends group status writes in the background: the latest write per group
// (a newer one replaces a pending older one), at most statusQPS per second, so that a
// pass that admits hundreds of groups binds them without waiting on their conditions.
type statusWriter struct {
	log     logr.Logger
	limiter flowcontrol.RateLimiter

	mu      sync.Mutex
	pending map[string]groupWrite
	order   []string // keys in the order they were first queued
	wake    chan struct{}

	failed failures // keys whose last write failed, for the loop to write again
	// refused holds the writes the API server refused for good (see permanent).
	refusedMu sync.Mutex
	refused   []refusal
}

// refusal is a group status write that the API server refused for a reason retrying
// does not mend: the object would be too large, or the write is invalid.
type refusal struct {
	key, significant string
	reason           metav1.StatusReason
	err              error
}

// permanent reports whether a write's error is one that retrying the same write does
// not mend: 422 Invalid (annotations too long), 413 or 400.
func permanent(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err)
}

// takeRefused returns the writes refused for good since the last call.
func (w *statusWriter) takeRefused() []refusal {
	w.refusedMu.Lock()
	defer w.refusedMu.Unlock()
	out := w.refused
	w.refused = nil
	return out
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

func newStatusWriter(log logr.Logger) *statusWriter {
	return &statusWriter{
		log:     log,
		limiter: flowcontrol.NewTokenBucketRateLimiter(statusQPS, statusBurst),
		pending: map[string]groupWrite{},
		wake:    make(chan struct{}, 1),
	}
}

// queue replaces the pending write of w.key, if any, with w.
func (w *statusWriter) queue(gw groupWrite) {
	w.mu.Lock()
	if _, ok := w.pending[gw.key]; !ok {
		w.order = append(w.order, gw.key)
	}
	w.pending[gw.key] = gw
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
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
	return gw, true
}

// run sends queued writes until ctx is done.
func (w *statusWriter) run(ctx context.Context) {
	for {
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
			if permanent(err) {
				w.refusedMu.Lock()
				w.refused = append(w.refused, refusal{gw.key, gw.significant, apierrors.ReasonForError(err), err})
				w.refusedMu.Unlock()
				continue
			}
			w.failed.add(gw.key)
		}
	}
}
