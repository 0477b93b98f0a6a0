package sandbox

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/scheduling/podgroupprotection"
)

// controllers runs, from upstream, the kube-controller-manager controllers the
// sandbox's users need:
//   - the PodGroup protection controller: the API server stamps every native PodGroup
//     with the scheduling.k8s.io/podgroup-protection finalizer, and only this controller
//     removes it, once a deleted PodGroup has no running pod left. Without it a deleted
//     PodGroup stays, terminating, forever;
//   - the Job controller, so that a batch/v1 Job applied to the sandbox creates its pods,
//     replaces the failed ones and honours its backoffLimit and podFailurePolicy, as on a
//     real cluster.
type controllers struct {
	factory informers.SharedInformerFactory
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Worker counts (kube-controller-manager runs 5 of each; the sandbox's objects are few).
// The PodGroup protection controller has one, so that it decides about PodGroups in
// the order their deletions reach it: a test can tell that the controller has decided
// about one (and kept it) when one deleted after it, with no pod, is gone.
const (
	podGroupProtectionWorkers = 1
	jobWorkers                = 2
)

// startControllers starts the controllers; stop stops them and waits for them.
func startControllers(client kubernetes.Interface) (*controllers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &controllers{factory: informers.NewSharedInformerFactory(client, 0), cancel: cancel}
	logger := klog.Background()
	pgp, err := podgroupprotection.NewPodGroupProtectionController(logger,
		c.factory.Scheduling().V1beta1().PodGroups(), c.factory.Core().V1().Pods(), client)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating the PodGroup protection controller: %w", err)
	}
	// The Workload and PodGroup informers serve the WorkloadWithJob feature, which is
	// off: the Job controller creates no PodGroups here.
	jobs, err := job.NewController(klog.NewContext(ctx, logger), client,
		c.factory.Core().V1().Pods(), c.factory.Batch().V1().Jobs(), nil, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating the Job controller: %w", err)
	}
	c.factory.Start(ctx.Done())
	c.wg.Go(func() { pgp.Run(ctx, podGroupProtectionWorkers) })
	c.wg.Go(func() { jobs.Run(ctx, jobWorkers) })
	return c, nil
}

func (c *controllers) stop() {
	c.cancel()
	c.wg.Wait()
	c.factory.Shutdown()
}
