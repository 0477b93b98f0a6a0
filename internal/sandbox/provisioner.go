package sandbox

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// provisioner simulates the cluster side of StorageDriver, as its CSI controller
// plugin with csi-provisioner and its node plugins with the kubelet would run:
//   - it provisions a claim that upstream's PV controller has handed to StorageDriver
//     (annotation volume.kubernetes.io/storage-provisioner): it creates a PV of the
//     claim's size, access modes and volume mode, pre-bound to the claim, which the PV
//     controller then binds. A WaitForFirstConsumer claim is provisioned on its
//     selected node (node affinity to the node's hostname and zone labels, and the
//     zone label on the volume, which kube-scheduler's VolumeZone reads); an
//     Immediate one anywhere its class's allowedTopologies allow;
//   - it deletes its Released volumes whose reclaim policy is Delete: the PV controller
//     leaves volumes of external provisioners to them;
//   - it keeps a CSINode per node with StorageDriver's allocatable count, and removes
//     it with its node (no garbage collector runs in the sandbox);
//   - with no garbage collector, it also deletes the claims a deleted pod owned (the
//     generic ephemeral volumes upstream's ephemeral controller made for it).
type provisioner struct {
	client   kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	nodes    corelisters.NodeLister
	csiNodes storagelisters.CSINodeLister
	limit    int32

	events   record.EventBroadcaster
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[storageItem]
}

// storageItem is one thing for the provisioner to sync.
type storageItem struct {
	kind itemKind
	// key is the claim's namespace/name, the volume's or node's name, or the deleted
	// pod's namespace.
	key string
	// owner is the deleted pod's UID, for itemOwnedClaims.
	owner types.UID
}

// itemKind says what a storageItem names.
type itemKind int

const (
	itemClaim itemKind = iota
	itemVolume
	itemNode
	itemOwnedClaims
)

// Reasons of the provisioner's events on claims, csi-provisioner's.
const (
	reasonProvisioning          = "Provisioning"
	reasonProvisioningFailed    = "ProvisioningFailed"
	reasonProvisioningSucceeded = "ProvisioningSucceeded"
)

// provisionerWorkers is the number of items synced in parallel.
const provisionerWorkers = 2

// newProvisioner sets up the provisioner on factory's informers; limit is each
// CSINode's allocatable count.
func newProvisioner(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, limit int32) (*provisioner, error) {
	p := &provisioner{
		client:   client,
		claims:   factory.Core().V1().PersistentVolumeClaims().Lister(),
		volumes:  factory.Core().V1().PersistentVolumes().Lister(),
		classes:  factory.Storage().V1().StorageClasses().Lister(),
		nodes:    factory.Core().V1().Nodes().Lister(),
		csiNodes: factory.Storage().V1().CSINodes().Lister(),
		limit:    limit,
		events:   record.NewBroadcaster(record.WithContext(ctx)),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[storageItem](),
			workqueue.TypedRateLimitingQueueConfig[storageItem]{Name: "sandbox-provisioner"}),
	}
	p.recorder = p.events.NewRecorder(scheme.Scheme, v1.EventSource{Component: StorageDriver + "_csi-provisioner"})
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{factory.Core().V1().PersistentVolumeClaims().Informer(), p.handler(itemClaim)},
		{factory.Core().V1().PersistentVolumes().Informer(), p.handler(itemVolume)},
		{factory.Core().V1().Nodes().Informer(), p.handler(itemNode)},
		{factory.Storage().V1().CSINodes().Informer(), p.handler(itemNode)},
		{factory.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: p.podDeleted}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return nil, fmt.Errorf("sandbox provisioner: watching: %w", err)
		}
	}
	return p, nil
}

// handler queues an item of kind for every object added, updated or deleted.
func (p *provisioner) handler(kind itemKind) cache.ResourceEventHandler {
	add := func(obj any) {
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.queue.Add(storageItem{kind: kind, key: k})
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add}
}

// podDeleted queues the collection of the claims the pod owned.
func (p *provisioner) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.Ephemeral != nil {
			p.queue.Add(storageItem{kind: itemOwnedClaims, key: pod.Namespace, owner: pod.UID})
			return
		}
	}
}

// run runs the workers until ctx ends; the informers must have been started.
func (p *provisioner) run(ctx context.Context, synced ...cache.InformerSynced) {
	p.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.client.CoreV1().Events("")})
	defer p.events.Shutdown()
	runWorkers(ctx, p.queue, provisionerWorkers, "Sandbox provisioner", p.sync, synced...)
}

// sync syncs one item, by its kind.
func (p *provisioner) sync(ctx context.Context, item storageItem) error {
	switch item.kind {
	case itemClaim:
		return p.syncClaim(ctx, item.key)
	case itemVolume:
		return p.syncVolume(ctx, item.key)
	case itemNode:
		return p.syncCSINode(ctx, item.key)
	case itemOwnedClaims:
		return p.collectClaims(ctx, item.key, item.owner)
	}
	return nil
}

// syncVolume deletes a volume StorageDriver provisioned once its claim is gone and
// the PV controller has marked it Released, if its reclaim policy is Delete.
func (p *provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if pv.Annotations[annDynamicallyProvisioned] != StorageDriver || pv.DeletionTimestamp != nil ||
		pv.Status.Phase != v1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		return nil
	}
	uid := pv.UID
	err = p.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting released volume %s: %w", name, err)
	}
	return nil
}

// syncCSINode makes node's CSINode what the kubelet would write (see csiNode), or
// deletes it when the node is gone. A CSINode of another driver's is left alone.
func (p *provisioner) syncCSINode(ctx context.Context, name string) error {
	node, err := p.nodes.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	cur, curErr := p.csiNodes.Get(name)
	if curErr != nil && !apierrors.IsNotFound(curErr) {
		return curErr
	}
	api := p.client.StorageV1().CSINodes()
	switch {
	case node == nil && cur == nil:
		return nil
	case node == nil:
		err = api.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
	case cur == nil:
		_, err = api.Create(ctx, csiNode(node, p.limit), metav1.CreateOptions{})
	case !ownedBy(cur, node.UID):
		// The CSINode of a node of the same name that was deleted: replace it.
		err = api.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
	default:
		want := csiNode(node, p.limit)
		if equality.Semantic.DeepEqual(cur.Spec, want.Spec) {
			return nil
		}
		updated := cur.DeepCopy()
		updated.Spec = want.Spec
		_, err = api.Update(ctx, updated, metav1.UpdateOptions{})
	}
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return nil // the informer brings the newer object
	} else if err != nil {
		return fmt.Errorf("syncing CSINode %s: %w", name, err)
	}
	return nil
}

// ownedBy reports whether c belongs to the node with uid.
func ownedBy(c *storagev1.CSINode, uid types.UID) bool {
	for _, o := range c.OwnerReferences {
		if o.Kind == "Node" && o.UID == uid {
			return true
		}
	}
	return false
}

// collectClaims deletes the claims in namespace ns whose controller is the deleted pod
// with uid, as the garbage collector would.
func (p *provisioner) collectClaims(ctx context.Context, ns string, uid types.UID) error {
	claims, err := p.claims.PersistentVolumeClaims(ns).List(everything)
	if err != nil {
		return err
	}
	for _, c := range claims {
		ref := metav1.GetControllerOf(c)
		if ref == nil || ref.Kind != "Pod" || ref.UID != uid || c.DeletionTimestamp != nil {
			continue
		}
		claimUID := c.UID
		err := p.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, c.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claimUID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting claim %s/%s of deleted pod: %w", ns, c.Name, err)
		}
	}
	return nil
}
