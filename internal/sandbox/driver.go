package sandbox

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// draDriver simulates the cluster side of DRADriver, as its kubelet plugin on every
// node would run, and does the garbage collector's part for ResourceClaims:
//   - it keeps, for every node with DRA GPUs (AnnotationDRAGPUs), one ResourceSlice of
//     the node's devices (see resourceSlice), owned by the node, and deletes every other
//     slice of DRADriver for that node: the slices of a node without GPUs, of a deleted
//     node, or of a node whose annotations are malformed (a Warning event on the node
//     says why, once per distinct message);
//   - with no garbage collector, it deletes the ResourceClaims whose controller was a
//     deleted pod or PodGroup (those upstream's resourceclaim controller made from
//     their templates), as the garbage collector would; the resourceclaim controller
//     has removed their reservations and allocations, or removes them then.
//
// It does not use k8s.io/dynamic-resource-allocation/resourceslice's Controller: that
// publishes the slices of one node (its NodeName comes from a Node owner), so a
// sandbox of 1,000 nodes would run 1,000 of them, each with its own watch and an
// initial sync that polls once a second; one controller over all nodes, as the
// sandbox's CSINodes are kept, starts 1,000 nodes' slices in one pass.
type draDriver struct {
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	slices cache.Indexer
	claims resourcelisters.ResourceClaimLister

	events   record.EventBroadcaster
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[draItem]

	mu     sync.Mutex
	warned map[string]string // node name → last Warning message recorded on it
}

// draItem is one thing for the driver to sync: a node's slices, or the claims a
// deleted owner in a namespace controlled.
type draItem struct {
	// node is the node's name, for a node's slices.
	node string
	// ns and owner are the namespace and UID of a deleted pod or PodGroup.
	ns    string
	owner types.UID
}

// sliceNodeIndex indexes ResourceSlices of DRADriver by spec.nodeName.
const sliceNodeIndex = "nodeName"

// reasonInvalidAnnotation is the reason of the driver's Warning event on a node whose
// DRA annotations are malformed: the kubelet's word for a malformed sandbox annotation.
const reasonInvalidAnnotation = "InvalidSandboxAnnotation"

// draDriverWorkers is the number of items synced in parallel.
const draDriverWorkers = 2

// newDRADriver sets up the driver on factory's informers.
func newDRADriver(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*draDriver, error) {
	sliceInformer := factory.Resource().V1().ResourceSlices().Informer()
	if err := sliceInformer.AddIndexers(cache.Indexers{sliceNodeIndex: sliceNodeKeys}); err != nil {
		return nil, fmt.Errorf("sandbox DRA driver: indexing ResourceSlices by node: %w", err)
	}
	d := &draDriver{
		client: client,
		nodes:  factory.Core().V1().Nodes().Lister(),
		slices: sliceInformer.GetIndexer(),
		claims: factory.Resource().V1().ResourceClaims().Lister(),
		events: record.NewBroadcaster(record.WithContext(ctx)),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[draItem](),
			workqueue.TypedRateLimitingQueueConfig[draItem]{Name: "sandbox-dra-driver"}),
		warned: map[string]string{},
	}
	d.recorder = d.events.NewRecorder(scheme.Scheme, v1.EventSource{Component: DRADriver + "-kubelet-plugin"})
	nodeKey := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		switch o := obj.(type) {
		case *v1.Node:
			d.queue.Add(draItem{node: o.Name})
		case *resourceapi.ResourceSlice:
			if o.Spec.Driver == DRADriver && o.Spec.NodeName != nil {
				d.queue.Add(draItem{node: *o.Spec.NodeName})
			}
		}
	}
	nodeHandler := cache.ResourceEventHandlerFuncs{AddFunc: nodeKey, UpdateFunc: func(_, obj any) { nodeKey(obj) }, DeleteFunc: nodeKey}
	owners := cache.ResourceEventHandlerFuncs{DeleteFunc: d.ownerDeleted}
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{factory.Core().V1().Nodes().Informer(), nodeHandler},
		{sliceInformer, nodeHandler},
		{factory.Core().V1().Pods().Informer(), owners},
		{factory.Scheduling().V1beta1().PodGroups().Informer(), owners},
	} {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return nil, fmt.Errorf("sandbox DRA driver: watching: %w", err)
		}
	}
	return d, nil
}

// sliceNodeKeys indexes a ResourceSlice of DRADriver by its node.
func sliceNodeKeys(obj any) ([]string, error) {
	s, ok := obj.(*resourceapi.ResourceSlice)
	if !ok || s.Spec.Driver != DRADriver || s.Spec.NodeName == nil {
		return nil, nil
	}
	return []string{*s.Spec.NodeName}, nil
}

// ownerDeleted queues the collection of the claims a deleted pod or PodGroup
// controlled.
func (d *draDriver) ownerDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	switch o := obj.(type) {
	case *v1.Pod:
		if len(o.Spec.ResourceClaims) > 0 {
			d.queue.Add(draItem{ns: o.Namespace, owner: o.UID})
		}
	case *schedulingv1beta1.PodGroup:
		if len(o.Spec.ResourceClaims) > 0 {
			d.queue.Add(draItem{ns: o.Namespace, owner: o.UID})
		}
	}
}

// run runs the workers until ctx ends; the informers must have been started.
func (d *draDriver) run(ctx context.Context, synced ...cache.InformerSynced) {
	d.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: d.client.CoreV1().Events("")})
	defer d.events.Shutdown()
	runWorkers(ctx, d.queue, draDriverWorkers, "Sandbox DRA driver", d.sync, synced...)
}

// sync syncs one item: a node's slices, or the claims of a deleted owner.
func (d *draDriver) sync(ctx context.Context, item draItem) error {
	if item.node != "" {
		return d.syncNode(ctx, item.node)
	}
	return d.collectClaims(ctx, item.ns, item.owner)
}

// syncNode makes the ResourceSlices of DRADriver for the node named name the one the
// node's GPUs call for (see resourceSlice), or none.
func (d *draDriver) syncNode(ctx context.Context, name string) error {
	node, err := d.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		node = nil
	} else if err != nil {
		return err
	}
	var want *resourceapi.ResourceSlice
	if node != nil {
		g, err := draGPUs(node)
		msg := ""
		if err != nil {
			msg = err.Error()
		} else if g.count > 0 {
			want = resourceSlice(node, g)
		}
		d.warn(node.Name, msg)
	} else {
		d.warn(name, "")
	}
	objs, err := d.slices.ByIndex(sliceNodeIndex, name)
	if err != nil {
		return err
	}
	api := d.client.ResourceV1().ResourceSlices()
	kept := false
	for _, obj := range objs {
		cur := obj.(*resourceapi.ResourceSlice)
		if want != nil && cur.Name == want.Name && node != nil && sliceOwnedBy(cur, node.UID) {
			kept = true
			if err := d.updateSlice(ctx, cur, want); err != nil {
				return err
			}
			continue
		}
		err := api.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting ResourceSlice %s of node %s: %w", cur.Name, name, err)
		}
	}
	if want == nil || kept {
		return nil
	}
	_, err = api.Create(ctx, want, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ResourceSlice of node %s: %w", name, err)
	}
	return nil // an existing slice of that name is synced when the informer brings it
}

// updateSlice makes cur's spec want's, in a new pool generation, if it differs.
func (d *draDriver) updateSlice(ctx context.Context, cur, want *resourceapi.ResourceSlice) error {
	w := want.Spec.DeepCopy()
	w.Pool.Generation = cur.Spec.Pool.Generation
	if equality.Semantic.DeepEqual(cur.Spec, *w) {
		return nil
	}
	w.Pool.Generation++
	updated := cur.DeepCopy()
	updated.Spec = *w
	_, err := d.client.ResourceV1().ResourceSlices().Update(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // the informer brings the newer slice, or its deletion
	} else if err != nil {
		return fmt.Errorf("updating ResourceSlice %s: %w", cur.Name, err)
	}
	return nil
}

// sliceOwnedBy reports whether s belongs to the node with uid.
func sliceOwnedBy(s *resourceapi.ResourceSlice, uid types.UID) bool {
	for _, o := range s.OwnerReferences {
		if o.APIVersion == "v1" && o.Kind == "Node" && o.UID == uid {
			return true
		}
	}
	return false
}

// warn records msg as a Warning event on the node named node unless it was the last
// one recorded there; an empty msg (the node is fine, or gone) only clears the record.
func (d *draDriver) warn(node, msg string) {
	d.mu.Lock()
	repeat := d.warned[node] == msg
	if msg == "" {
		delete(d.warned, node)
	} else {
		d.warned[node] = msg
	}
	d.mu.Unlock()
	if msg != "" && !repeat {
		// Events of a cluster-scoped object name it by kind and name, as the kubelet's do.
		ref := &v1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)}
		d.recorder.Eventf(ref, v1.EventTypeWarning, reasonInvalidAnnotation, "%s; publishing no devices", msg)
	}
}

// collectClaims deletes the ResourceClaims in namespace ns whose controller is the
// deleted pod or PodGroup with uid, as the garbage collector would.
func (d *draDriver) collectClaims(ctx context.Context, ns string, uid types.UID) error {
	claims, err := d.claims.ResourceClaims(ns).List(everything)
	if err != nil {
		return err
	}
	for _, c := range claims {
		ref := metav1.GetControllerOf(c)
		if ref == nil || ref.UID != uid || c.DeletionTimestamp != nil {
			continue
		}
		claimUID := c.UID
		err := d.client.ResourceV1().ResourceClaims(ns).Delete(ctx, c.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claimUID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting ResourceClaim %s/%s of deleted %s %s: %w", ns, c.Name, ref.Kind, ref.Name, err)
		}
	}
	return nil
}
