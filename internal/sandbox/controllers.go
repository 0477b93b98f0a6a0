package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/resourceclaim"
	"k8s.io/kubernetes/pkg/controller/scheduling/podgroupprotection"
	"k8s.io/kubernetes/pkg/controller/volume/ephemeral"
	"k8s.io/kubernetes/pkg/controller/volume/persistentvolume"
	"k8s.io/kubernetes/pkg/controller/volume/pvcprotection"
	"k8s.io/kubernetes/pkg/controller/volume/pvprotection"
)

// controllers runs, from upstream, the kube-controller-manager controllers the
// sandbox's users need:
//   - the PodGroup protection controller: the API server stamps every native PodGroup
//     with the scheduling.k8s.io/podgroup-protection finalizer, and only this controller
//     removes it, once a deleted PodGroup has no running pod left. Without it a deleted
//     PodGroup stays, terminating, forever;
//   - the Job controller, so that a batch/v1 Job applied to the sandbox creates its pods,
//     replaces the failed ones and honours its backoffLimit and podFailurePolicy, as on a
//     real cluster;
//   - the PersistentVolume controller (the binder), with dynamic provisioning on and no
//     volume plugins: it binds claims to matching volumes, waits for a scheduler's
//     volume.kubernetes.io/selected-node on claims of WaitForFirstConsumer classes, and
//     hands provisioning to the class's external provisioner (the sandbox's own, see
//     provisioner);
//   - the PVC and PV protection controllers, which remove the finalizers the API server's
//     StorageObjectInUseProtection admission puts on every claim and volume, once
//     nothing uses them; without them, deleted claims and volumes stay forever;
//   - the ephemeral volume controller, which creates the claim of a pod's generic
//     ephemeral volume (<pod>-<volume>);
//   - the resourceclaim controller: it makes the ResourceClaim of a pod's (or, with
//     DRAWorkloadResourceClaims, a native PodGroup's) ResourceClaimTemplate, records
//     its name in the pod's status.resourceClaimStatuses, removes the reservations of
//     pods that are gone or done, and deallocates a claim reserved for nobody. The
//     sandbox's DRA driver (see draDriver) publishes the devices and deletes the
//     generated claims of deleted pods and PodGroups, as the garbage collector would.
type controllers struct {
	factory informers.SharedInformerFactory
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Worker counts (kube-controller-manager runs 5 of each; the sandbox's objects are few).
// The resourceclaim controller has kube-controller-manager's default of 50
// (--concurrent-resourceclaim-syncs): a bench's thousands of pods with claim templates
// wait for it before any scheduler can place them.
// The PodGroup protection controller has one, so that it decides about PodGroups in
// the order their deletions reach it: a test can tell that the controller has decided
// about one (and kept it) when one deleted after it, with no pod, is gone.
const (
	podGroupProtectionWorkers = 1
	jobWorkers                = 2
	volumeProtectionWorkers   = 1
	ephemeralWorkers          = 1
	resourceClaimWorkers      = 50
)

// claimBinderSyncPeriod is how often the PV controller resyncs every claim and volume:
// kube-controller-manager's default --pvclaimbinder-sync-period.
const claimBinderSyncPeriod = 15 * time.Second

// startControllers starts the controllers and the sandbox's provisioner, whose
// CSINodes allow volumeLimit volumes per node; stop stops them and waits for them.
func startControllers(client kubernetes.Interface, volumeLimit int32) (*controllers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &controllers{factory: informers.NewSharedInformerFactory(client, 0), cancel: cancel}
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)
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
	runVolumes, err := c.volumeControllers(ctx, client, volumeLimit)
	if err != nil {
		cancel()
		return nil, err
	}
	runDRA, err := c.draControllers(ctx, client)
	if err != nil {
		cancel()
		return nil, err
	}
	c.factory.Start(ctx.Done())
	c.wg.Go(func() { pgp.Run(ctx, podGroupProtectionWorkers) })
	c.wg.Go(func() { jobs.Run(ctx, jobWorkers) })
	for _, run := range append(runVolumes, runDRA...) {
		c.wg.Go(run)
	}
	return c, nil
}

// draControllers creates the resourceclaim controller and the sandbox's DRA driver on
// c's informers and returns their run functions, to be called once the informers are
// started.
func (c *controllers) draControllers(ctx context.Context, client kubernetes.Interface) ([]func(), error) {
	logger := klog.FromContext(ctx)
	res := c.factory.Resource().V1()
	claims, err := resourceclaim.NewController(logger, client, c.factory.Core().V1().Pods(),
		c.factory.Scheduling().V1beta1().PodGroups(), res.ResourceClaims(), res.ResourceClaimTemplates())
	if err != nil {
		return nil, fmt.Errorf("creating the resourceclaim controller: %w", err)
	}
	driver, err := newDRADriver(ctx, client, c.factory)
	if err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{
		c.factory.Core().V1().Nodes().Informer().HasSynced, res.ResourceSlices().Informer().HasSynced,
		res.ResourceClaims().Informer().HasSynced, c.factory.Core().V1().Pods().Informer().HasSynced,
		c.factory.Scheduling().V1beta1().PodGroups().Informer().HasSynced,
	}
	return []func(){
		func() { claims.Run(ctx, resourceClaimWorkers) },
		func() { driver.run(ctx, synced...) },
	}, nil
}

// volumeControllers creates the storage controllers on c's informers and returns
// their run functions, to be called once the informers are started.
func (c *controllers) volumeControllers(ctx context.Context, client kubernetes.Interface, volumeLimit int32) ([]func(), error) {
	logger := klog.FromContext(ctx)
	core, storage := c.factory.Core().V1(), c.factory.Storage().V1()
	binder, err := persistentvolume.NewController(ctx, persistentvolume.ControllerParameters{
		KubeClient:                client,
		SyncPeriod:                claimBinderSyncPeriod,
		VolumeInformer:            core.PersistentVolumes(),
		ClaimInformer:             core.PersistentVolumeClaims(),
		ClassInformer:             storage.StorageClasses(),
		PodInformer:               core.Pods(),
		NodeInformer:              core.Nodes(),
		EnableDynamicProvisioning: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the PersistentVolume controller: %w", err)
	}
	pvcp, err := pvcprotection.NewPVCProtectionController(logger, core.PersistentVolumeClaims(), core.Pods(), client)
	if err != nil {
		return nil, fmt.Errorf("creating the PVC protection controller: %w", err)
	}
	pvp, err := pvprotection.NewPVProtectionController(logger, core.PersistentVolumes(), client)
	if err != nil {
		return nil, fmt.Errorf("creating the PV protection controller: %w", err)
	}
	eph, err := ephemeral.NewController(ctx, client, core.Pods(), core.PersistentVolumeClaims())
	if err != nil {
		return nil, fmt.Errorf("creating the ephemeral volume controller: %w", err)
	}
	prov, err := newProvisioner(ctx, client, c.factory, volumeLimit)
	if err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{
		core.PersistentVolumeClaims().Informer().HasSynced, core.PersistentVolumes().Informer().HasSynced,
		core.Nodes().Informer().HasSynced, storage.CSINodes().Informer().HasSynced,
		storage.StorageClasses().Informer().HasSynced, core.Pods().Informer().HasSynced,
	}
	return []func(){
		func() { binder.Run(ctx) },
		func() { pvcp.Run(ctx, volumeProtectionWorkers) },
		func() { pvp.Run(ctx, volumeProtectionWorkers) },
		func() { eph.Run(ctx, ephemeralWorkers) },
		func() { prov.run(ctx, synced...) },
	}, nil
}

func (c *controllers) stop() {
	c.cancel()
	c.wg.Wait()
	c.factory.Shutdown()
}
