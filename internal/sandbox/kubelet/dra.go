package kubelet

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	nodeaffinity "k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// ReasonFailedPrepareDynamicResources is the reason of the Warning event the kubelet
// records on a pod whose ResourceClaims it cannot prepare yet, as a real kubelet does.
const ReasonFailedPrepareDynamicResources = "FailedPrepareDynamicResources"

// resourceClaimIndex indexes pods by the ResourceClaims (namespace/name) they use;
// sliceNodeIndex indexes ResourceSlices by spec.nodeName.
const (
	resourceClaimIndex = "resourceClaim"
	sliceNodeIndex     = "nodeName"
)

// deviceClaims are pod's claims for devices, as the kubelet's DRA manager reads them:
// spec.resourceClaims, and the claim the scheduler made for the pod's extended
// resources backed by devices (status.extendedResourceClaimStatus).
func deviceClaims(pod *v1.Pod) []v1.PodResourceClaim {
	claims := pod.Spec.ResourceClaims
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		claims = append(append([]v1.PodResourceClaim(nil), claims...), v1.PodResourceClaim{ResourceClaimName: &s.ResourceClaimName})
	}
	return claims
}

// resourceClaimKeys indexes a pod by the ResourceClaims it uses that have a name yet.
func resourceClaimKeys(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, pc := range deviceClaims(pod) {
		if name, _, err := resourceclaim.Name(pod, &pc); err == nil && name != nil {
			keys = append(keys, pod.Namespace+"/"+*name)
		}
	}
	return keys, nil
}

// unprepared returns why the kubelet cannot prepare pod's ResourceClaims on node yet,
// in the words of the kubelet's FailedPrepareDynamicResources event, or "" if it can.
// As the kubelet's DRA manager does, claim by claim: the claim must have been made
// (a template's claim is named in the pod's status), exist, be the pod's own (or its
// PodGroup's) when made from a template, be reserved for the pod (or its PodGroup),
// and be allocated; then, as the driver's NodePrepareResources would, the allocation
// must be for nodes that include node, and each device must be one its driver
// publishes for node.
func (k *Kubelet) unprepared(pod *v1.Pod, node *v1.Node) string {
	for _, pc := range deviceClaims(pod) {
		if err := k.claimPreparable(pod, &pc, node); err != nil {
			return "Failed to prepare dynamic resources: " + err.Error()
		}
	}
	return ""
}

// claimPreparable checks one claim of pod (see unprepared).
func (k *Kubelet) claimPreparable(pod *v1.Pod, pc *v1.PodResourceClaim, node *v1.Node) error {
	name, mustCheckOwner, err := resourceclaim.Name(pod, pc)
	if err != nil {
		return err
	} else if name == nil {
		return nil // intentionally not made: nothing to prepare
	}
	claim, err := k.resourceClaims.ResourceClaims(pod.Namespace).Get(*name)
	if apierrors.IsNotFound(err) {
		err = apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), *name) // the API server's words
	}
	if err != nil {
		return fmt.Errorf("fetch ResourceClaim %s: %w", *name, err)
	}
	if mustCheckOwner {
		if err := resourceclaim.IsForPod(pod, claim, true); err != nil {
			return err
		}
	}
	if !resourceclaim.IsReservedForPod(pod, claim, true) {
		return fmt.Errorf("pod %s (%s) is not allowed to use ResourceClaim %s (%s)", pod.Name, pod.UID, *name, claim.UID)
	}
	alloc := claim.Status.Allocation
	if alloc == nil {
		return fmt.Errorf("ResourceClaim %s: not allocated", claim.Name)
	}
	if alloc.NodeSelector != nil {
		sel, err := nodeaffinity.NewNodeSelector(alloc.NodeSelector)
		if err != nil {
			return fmt.Errorf("NodePrepareResources failed for ResourceClaim %s: allocation nodeSelector: %w", claim.Name, err)
		}
		if !sel.Match(node) {
			return fmt.Errorf("NodePrepareResources failed for ResourceClaim %s: it is allocated for other nodes (its allocation's nodeSelector does not select node %s)", claim.Name, node.Name)
		}
	}
	return k.devicesOnNode(claim, alloc.Devices.Results, node)
}

// devicesOnNode checks that every allocated device is one that its driver publishes
// in a ResourceSlice for node (or for nodes that include it): the driver must be
// registered there, and the device be in its pool.
func (k *Kubelet) devicesOnNode(claim *resourceapi.ResourceClaim, results []resourceapi.DeviceRequestAllocationResult, node *v1.Node) error {
	slices, err := k.nodeSlices(node)
	if err != nil {
		return err
	}
	registered := map[string]bool{}
	devices := map[string]bool{}
	for _, s := range slices {
		registered[s.Spec.Driver] = true
		for _, d := range s.Spec.Devices {
			devices[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name] = true
		}
	}
	for _, r := range results {
		if !registered[r.Driver] {
			return fmt.Errorf("DRA driver %s is not registered", r.Driver)
		}
		if id := r.Driver + "/" + r.Pool + "/" + r.Device; !devices[id] {
			return fmt.Errorf("NodePrepareResources failed for ResourceClaim %s: device %s not found on node %s", claim.Name, id, node.Name)
		}
	}
	return nil
}

// nodeSlices are the ResourceSlices whose devices node can reach: those for node by
// name, and those for all nodes or for nodes that a selector picks which include it.
func (k *Kubelet) nodeSlices(node *v1.Node) ([]*resourceapi.ResourceSlice, error) {
	objs, err := k.sliceIndex.ByIndex(sliceNodeIndex, node.Name)
	if err != nil {
		return nil, err
	}
	shared, err := k.sliceIndex.ByIndex(sliceNodeIndex, "")
	if err != nil {
		return nil, err
	}
	var out []*resourceapi.ResourceSlice
	for _, obj := range append(objs, shared...) {
		s, ok := obj.(*resourceapi.ResourceSlice)
		if !ok {
			continue
		}
		if s.Spec.NodeSelector != nil {
			sel, err := nodeaffinity.NewNodeSelector(s.Spec.NodeSelector)
			if err != nil || !sel.Match(node) {
				continue
			}
		} else if s.Spec.NodeName == nil && (s.Spec.AllNodes == nil || !*s.Spec.AllNodes) {
			continue // devices that select their nodes one by one: not simulated
		}
		out = append(out, s)
	}
	return out, nil
}

// sliceNodeKeys indexes a ResourceSlice by its node name, "" for one not of one node.
func sliceNodeKeys(obj any) ([]string, error) {
	s, ok := obj.(*resourceapi.ResourceSlice)
	if !ok {
		return nil, nil
	}
	if s.Spec.NodeName != nil {
		return []string{*s.Spec.NodeName}, nil
	}
	return []string{""}, nil
}

// warnUnprepared records msg as a FailedPrepareDynamicResources event on pod, once
// per distinct message in a row (see warnUnmountable).
func (k *Kubelet) warnUnprepared(pod *v1.Pod, msg string) {
	k.mu.Lock()
	a := k.admitted[pod.UID]
	repeat := a == nil || a.prepareError == msg
	if a != nil {
		a.prepareError = msg
	}
	k.mu.Unlock()
	if !repeat {
		k.recorder.Event(pod, v1.EventTypeWarning, ReasonFailedPrepareDynamicResources, msg)
	}
}

// prepared records that pod's claims were prepared at now (at once with its volumes'
// mount, for a pod with no claims), unless they were before, and returns its
// admission a with the time they were.
func (k *Kubelet) prepared(pod *v1.Pod, a admission, now time.Time) admission {
	at := now
	if len(deviceClaims(pod)) == 0 {
		at = a.mountedAt
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	cur, ok := k.admitted[pod.UID]
	if !ok {
		a.preparedAt = at
		return a
	}
	if cur.preparedAt.IsZero() {
		cur.preparedAt = at
		cur.prepareError = ""
	}
	return *cur
}

// watchDevices sets up the ResourceClaim and ResourceSlice informers and indexes pods
// by claim, so that a pod waiting for its claims is synced when a claim of it, or a
// slice of its node, changes.
func (k *Kubelet) watchDevices(podInformer cache.SharedIndexInformer) error {
	if err := podInformer.AddIndexers(cache.Indexers{resourceClaimIndex: resourceClaimKeys}); err != nil {
		return fmt.Errorf("indexing pods by ResourceClaim: %w", err)
	}
	claimInformer := k.factory.Resource().V1().ResourceClaims()
	sliceInformer := k.factory.Resource().V1().ResourceSlices().Informer()
	if err := sliceInformer.AddIndexers(cache.Indexers{sliceNodeIndex: sliceNodeKeys}); err != nil {
		return fmt.Errorf("indexing ResourceSlices by node: %w", err)
	}
	k.resourceClaims = claimInformer.Lister()
	k.sliceIndex = sliceInformer.GetIndexer()
	k.synced = append(k.synced, claimInformer.Informer().HasSynced, sliceInformer.HasSynced)
	claimChanged := func(obj any) {
		if c, ok := obj.(*resourceapi.ResourceClaim); ok {
			k.enqueueIndexed(resourceClaimIndex, c.Namespace+"/"+c.Name)
		}
	}
	sliceChanged := func(obj any) {
		if s, ok := obj.(*resourceapi.ResourceSlice); ok && s.Spec.NodeName != nil {
			k.enqueueIndexed(nodeIndex, *s.Spec.NodeName)
		}
	}
	if _, err := claimInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: claimChanged, UpdateFunc: func(_, obj any) { claimChanged(obj) },
	}); err != nil {
		return fmt.Errorf("watching ResourceClaims: %w", err)
	}
	if _, err := sliceInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: sliceChanged, UpdateFunc: func(_, obj any) { sliceChanged(obj) },
	}); err != nil {
		return fmt.Errorf("watching ResourceSlices: %w", err)
	}
	return nil
}

// enqueueIndexed queues the pods of the pod index named index under key.
func (k *Kubelet) enqueueIndexed(index, key string) {
	pods, err := k.podIndex.ByIndex(index, key)
	if err != nil {
		return
	}
	for _, obj := range pods {
		k.enqueuePod(obj)
	}
}
