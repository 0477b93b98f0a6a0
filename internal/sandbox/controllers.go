package sandbox

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/scheduling/podgroupprotection"
)

// controllers runs, from upstream, the kube-controller-manager controllers the
// sandbox's APIs need. Today that is the PodGroup protection controller: the API
// server stamps every native PodGroup with the scheduling.k8s.io/podgroup-protection
// finalizer, and only this controller removes it, once a deleted PodGroup has no
// running pod left. Without it a deleted PodGroup stays, terminating, forever.
type controllers struct {
	factory informers.SharedInformerFactory
	cancel  context.CancelFunc
	done    chan struct{}
}

// podGroupProtectionWorkers is the controller's worker count (kube-controller-manager
// runs 5; the sandbox's PodGroups are few).
const podGroupProtectionWorkers = 2

// startControllers starts the controllers; stop stops them and waits for them.
func startControllers(client kubernetes.Interface) (*controllers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &controllers{factory: informers.NewSharedInformerFactory(client, 0), cancel: cancel, done: make(chan struct{})}
	pgp, err := podgroupprotection.NewPodGroupProtectionController(klog.Background(),
		c.factory.Scheduling().V1beta1().PodGroups(), c.factory.Core().V1().Pods(), client)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating the PodGroup protection controller: %w", err)
	}
	c.factory.Start(ctx.Done())
	go func() {
		defer close(c.done)
		pgp.Run(ctx, podGroupProtectionWorkers)
	}()
	return c, nil
}

func (c *controllers) stop() {
	c.cancel()
	<-c.done
	c.factory.Shutdown()
}
