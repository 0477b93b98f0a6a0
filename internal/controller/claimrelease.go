package controller

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"

	"github.com/muster-sched/muster/internal/engine"
)

// claimReleaser releases the claims evicted groups hold for themselves (a native
// PodGroup's own claims), so that a group waiting for its next attempt holds no devices,
// off the scheduling loop: the loop hands each group's releases (send), and
// claimReleaseWorkers send them. The engine does not place a group while its release is
// in flight (the snapshot shows the claim still reserved for it), so that a release
// cannot land after a placement that counts on the claim's allocation; a release that
// fails is reported back to the loop (takeFailed, then Engine.ClaimReleaseFailed), and
// the engine asks for it again later (10 s, then up to 5 min apart). The consumer is the
// group's PodGroup, in the claim's namespace, as translated from the PodGroup object
// muster watches. (The loop released the claims itself: a write the API server held held
// up all scheduling for up to the request's timeout.)
type claimReleaser struct {
	*kit
	work workqueue.TypedRateLimitingInterface[string]
	wake func()

	mu sync.Mutex
	// pending holds, by group, the releases to send that were not sent yet.
	pending map[string][]engine.ClaimRelease
	// failed holds the groups whose releases failed, for the loop.
	failed failures
}

// claimReleaseWorkers is how many groups' releases are sent at once.
const claimReleaseWorkers = 4

func newClaimReleaser(k *kit, wake func()) *claimReleaser {
	return &claimReleaser{
		kit: k, wake: wake, pending: map[string][]engine.ClaimRelease{},
		work: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "claimreleases"}),
	}
}

// send queues the releases, by group, in place of any of the same group not sent yet.
func (r *claimReleaser) send(releases []engine.ClaimRelease) {
	byGroup := map[string][]engine.ClaimRelease{}
	for _, rel := range releases {
		byGroup[rel.Group] = append(byGroup[rel.Group], rel)
	}
	for group, rels := range byGroup {
		r.mu.Lock()
		r.pending[group] = rels
		r.mu.Unlock()
		r.work.Add(group)
	}
}

// takeFailed returns the groups whose releases failed since the last call.
func (r *claimReleaser) takeFailed() []string { return r.failed.take() }

// run sends the queued releases until ctx is done.
func (r *claimReleaser) run(ctx context.Context) {
	drain(ctx, claimReleaseWorkers, r.work, r.releaseNext)
}

// releaseNext sends the next queued group's releases, each tried again on a conflict
// (claimTries), and reports the group to the loop if one failed; false once the queue
// is shut down. A failed release is not queued again here: the engine asks again.
func (r *claimReleaser) releaseNext(ctx context.Context) bool {
	return retried(r.work, func(group string) bool {
		rels, ok := taken(&r.mu, r.pending, group)
		failed := false
		for _, rel := range rels {
			if err := r.releaseOne(ctx, rel); err != nil && ctx.Err() == nil {
				r.log.Error(err, "releasing a claim of an evicted group", "group", rel.Group, "claim", rel.Namespace+"/"+rel.Claim)
				failed = true
			}
		}
		if ok && failed {
			r.failed.add(group)
			r.wake()
		}
		return false
	})
}

// releaseOne removes rel's consumer from rel's claim, and deallocates the claim if no
// reservation is left; a claim gone is released.
func (r *claimReleaser) releaseOne(ctx context.Context, rel engine.ClaimRelease) error {
	for try := 1; ; try++ {
		err := r.release(ctx, rel.Namespace, rel.Claim, rel.Consumer.UID)
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) || try == claimTries {
			return err
		}
	}
}
