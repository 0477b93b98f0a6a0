package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// queueStatusWriter writes the Queues' status off the scheduling loop: the loop hands
// each Queue's latest status patch (want), and one worker sends it. A newer patch
// replaces one not sent yet; a patch that fails is sent again, queueStatusRetry and up
// to queueStatusRetryMax apart, unless a newer one replaced it. (The loop wrote each
// changed Queue's status itself, once a second: a write the API server held held up
// all scheduling for up to the request's timeout.)
type queueStatusWriter struct {
	*kit
	client client.SubResourceWriter
	work   workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// wanted holds, per Queue, the patch to send that was not sent yet.
	wanted map[string][]byte
}

// queueStatusRetry and queueStatusRetryMax bound the wait before a failed Queue status
// write is sent again: the first waits queueStatusRetry, each next one twice as long.
const (
	queueStatusRetry    = time.Second
	queueStatusRetryMax = time.Minute
)

func newQueueStatusWriter(k *kit, c client.SubResourceWriter) *queueStatusWriter {
	return &queueStatusWriter{
		kit: k, client: c,
		work: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](queueStatusRetry, queueStatusRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "queuestatus"}),
		wanted: map[string][]byte{},
	}
}

// want queues patch, a merge patch of Queue name's status, in place of any not sent yet.
func (w *queueStatusWriter) want(name string, patch []byte) {
	w.mu.Lock()
	w.wanted[name] = patch
	w.mu.Unlock()
	w.work.Add(name)
}

// run sends the queued patches until ctx is done.
func (w *queueStatusWriter) run(ctx context.Context) { drain(ctx, 1, w.work, w.writeNext) }

// writeNext sends the next queued patch; false once the queue is shut down.
func (w *queueStatusWriter) writeNext(ctx context.Context) bool {
	return retried(w.work, func(name string) bool {
		w.mu.Lock()
		patch, ok := w.wanted[name]
		w.mu.Unlock()
		if !ok {
			return false
		}
		err := w.send(ctx, name, patch)
		w.mu.Lock()
		defer w.mu.Unlock()
		replaced := string(w.wanted[name]) != string(patch)
		switch {
		case err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			// Written, or never will be as it is: a Queue deleted, or a patch the API
			// server refuses (the next change of the Queue's numbers makes a new one).
			if err != nil {
				w.log.Error(err, "writing a Queue's status; not sent again", "queue", name)
			}
			if !replaced {
				delete(w.wanted, name)
			}
			return false
		case replaced || ctx.Err() != nil:
			return false // the newer patch is queued already, or muster is stopping
		}
		w.log.Error(err, "writing a Queue's status; sent again", "queue", name)
		return true
	})
}

// send merge-patches Queue name's status subresource, within requestTimeout.
func (w *queueStatusWriter) send(ctx context.Context, name string, patch []byte) error {
	obj := &musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}}
	// The manager's client has no timeout of its own (its config is the watches').
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := w.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching the status of Queue %s: %w", name, err)
	}
	return nil
}
