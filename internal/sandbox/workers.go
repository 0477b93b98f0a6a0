package sandbox

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// runWorkers runs n workers that sync the items of q until ctx ends, once synced have
// synced, and returns when they have stopped. A failed sync is retried with q's backoff
// and logged under what, the controller's name.
func runWorkers[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], n int, what string,
	syncItem func(context.Context, T) error, synced ...cache.InformerSynced) {
	defer q.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for processNext(ctx, q, what, syncItem) {
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

// processNext syncs one item of q; it returns false once q is shut down.
func processNext[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], what string,
	syncItem func(context.Context, T) error) bool {
	item, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(item)
	if err := syncItem(ctx, item); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, what+" sync failed, will retry", "item", item)
		q.AddRateLimited(item)
		return true
	}
	q.Forget(item)
	return true
}
