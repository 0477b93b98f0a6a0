package kubefit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/cluster"
)

// Extended resources backed by DRA (KEP-5004, GA in Kubernetes 1.37): a DeviceClass
// that names an extended resource (spec.extendedResourceName, or implicitly
// deviceclass.resource.kubernetes.io/<class>) provides it as devices on the nodes that
// do not have it in their allocatable. kube-scheduler's DynamicResources plugin judges
// such a request on those nodes and allocates its devices in a ResourceClaim it makes
// for the pod: muster hosts that plugin, so the allocation is upstream's, and writes the
// claim as the plugin's PreBind does (see ExtendedClaim).

// registerExtendedResources feeds the DRA manager's map of extended resources to
// DeviceClasses from the DeviceClass informer, as kube-scheduler's event handlers do:
// without it the plugin sees no class behind any extended resource.
func (h *Host) registerExtendedResources() error {
	erc, ok := h.dra.DeviceClassResolver().(*extendedresourcecache.ExtendedResourceCache)
	if !ok || erc == nil {
		return nil // DRAExtendedResource off (it is locked on in v1.37)
	}
	// The map keeps the newer of two classes naming one resource, and a class older
	// than the one it loses to gets no implicit name: the classes come in name order,
	// as kube-scheduler's informer lists them.
	inf := h.informers[reflect.TypeOf(&resourcev1.DeviceClass{})]
	inf.ordered = true
	_, err := inf.AddEventHandler(erc)
	return err
}

// ExtendedClasses returns, for each extended resource of req that a DeviceClass of snap
// provides through DRA, the class's name (kube-scheduler's choice when several name
// it); nil when there is none. A node whose allocatable lacks such a resource is judged
// for it by the DynamicResources plugin, not by counting.
func (h *Host) ExtendedClasses(snap *cluster.Snapshot, req cluster.Resources) (map[corev1.ResourceName]string, error) {
	if len(snap.Objects().DeviceClasses) == 0 {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(snap); err != nil {
		return nil, err
	}
	var out map[corev1.ResourceName]string
	for name, n := range req {
		if class := h.extendedClass(name); n > 0 && class != "" {
			if out == nil {
				out = map[corev1.ResourceName]string{}
			}
			out[name] = class
		}
	}
	return out, nil
}

// extendedClass is the DeviceClass that provides extended resource name through DRA,
// "" if none does. The host is locked and loaded.
func (h *Host) extendedClass(name corev1.ResourceName) string {
	if !schedutil.IsDRAExtendedResourceName(name) {
		return ""
	}
	if c := h.dra.DeviceClassResolver().GetDeviceClass(name); c != nil {
		return c.Name
	}
	return ""
}

// HoldsDevices reports whether pod asks for DRA devices through ResourceClaims, or
// was given a claim for its extended resources backed by DRA
// (status.extendedResourceClaimStatus).
func HoldsDevices(pod *corev1.Pod) bool {
	return HasResourceClaims(pod) || pod.Status.ExtendedResourceClaimStatus != nil
}

// ExtendedResources returns every extended resource a DeviceClass of snap provides
// through DRA (each class's spec.extendedResourceName and its implicit
// deviceclass.resource.kubernetes.io/ name), with the class kube-scheduler takes for it
// when several name it; nil when there is none.
func (h *Host) ExtendedResources(snap *cluster.Snapshot) (map[corev1.ResourceName]string, error) {
	objs := snap.Objects()
	if len(objs.DeviceClasses) == 0 {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(snap); err != nil {
		return nil, err
	}
	resolver := h.dra.DeviceClassResolver()
	out := map[corev1.ResourceName]string{}
	for _, c := range objs.DeviceClasses {
		for _, name := range []corev1.ResourceName{corev1.ResourceName(ptr.Deref(c.Spec.ExtendedResourceName, "")),
			corev1.ResourceName(resourcev1.ResourceDeviceClassPrefix + c.Name)} {
			if name == "" {
				continue
			}
			if class := resolver.GetDeviceClass(name); class != nil {
				out[name] = class.Name
			}
		}
	}
	return out, nil
}

// HeldClaims returns the ResourceClaims of snap that pod refers to (ClaimsOf), with the
// claim made for its extended resources backed by DRA that its status names.
func HeldClaims(snap *cluster.Snapshot, pod *corev1.Pod) []*resourcev1.ResourceClaim {
	claims, _ := ClaimsOf(snap, pod)
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		if c := snap.ResourceClaim(pod.Namespace + "/" + s.ResourceClaimName); c != nil && IsExtendedClaimOf(c, pod) {
			claims = append(claims, c)
		}
	}
	return claims
}

// asksExtendedByDRA reports whether pod requests an extended resource a DeviceClass
// provides through DRA. The host is locked and loaded.
func (h *Host) asksExtendedByDRA(pod *corev1.Pod) bool {
	if len(h.objects.DeviceClasses) == 0 {
		return false // most clusters: no pod's requests are read
	}
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if !q.IsZero() && h.extendedClass(name) != "" {
			return true
		}
	}
	return false
}

// ExtendedClaim is the ResourceClaim that holds the devices allocated for a pod's
// extended resources backed by DRA on its node, as kube-scheduler's DynamicResources
// makes it: owned by the pod, annotated resource.kubernetes.io/extended-resource-claim,
// with one request per container and resource, and the mappings the pod's
// status.extendedResourceClaimStatus gives the kubelet. muster names it
// ExtendedClaimName(pod) (kube-scheduler lets the API server generate a name): the
// snapshot shows it under that name, assumed, until the binder's claim is observed.
type ExtendedClaim struct {
	Spec     resourcev1.ResourceClaimSpec
	Mappings []corev1.ContainerExtendedResourceRequest
}

// ExtendedClaimName is the name of pod's claim for its extended resources backed by DRA:
// the pod's name and a hash of its UID, within a ResourceClaim name's 253 characters.
func ExtendedClaimName(pod *corev1.Pod) string {
	sum := sha256.Sum256([]byte(pod.UID))
	suffix := "-extended-resources-" + hex.EncodeToString(sum[:])[:8]
	name := pod.Name
	if n := 253 - len(suffix); len(name) > n {
		name = name[:n]
	}
	return name + suffix
}

// ExtendedClaimObject is the claim ca (an extended claim) makes for pod, as
// kube-scheduler creates it: annotated, controlled by pod, protected by the
// finalizer, with ca's spec.
func ExtendedClaimObject(pod *corev1.Pod, ca ClaimAllocation) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pod.Namespace, Name: ca.Name,
			Annotations: map[string]string{resourcev1.ExtendedResourceClaimAnnotation: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true)}},
			Finalizers: []string{resourcev1.Finalizer},
		},
		Spec: *ca.Extended.Spec.DeepCopy(),
	}
}

// ExtendedReservation is ca's allocation reserved for pod: the status the binder writes
// on the claim it created.
func ExtendedReservation(pod *corev1.Pod, ca ClaimAllocation) resourcev1.ResourceClaimStatus {
	return resourcev1.ResourceClaimStatus{
		Allocation:  ca.Allocation.DeepCopy(),
		ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}},
	}
}

// IsExtendedClaimOf reports whether claim is pod's claim for its extended resources
// backed by DRA: annotated as one, and controlled by pod.
func IsExtendedClaimOf(claim *resourcev1.ResourceClaim, pod *corev1.Pod) bool {
	if claim.Annotations[resourcev1.ExtendedResourceClaimAnnotation] != "true" {
		return false
	}
	ref := metav1.GetControllerOf(claim)
	return ref != nil && ref.Kind == "Pod" && ref.UID == pod.UID
}

// reserveExtended reads, after the plugin's Reserve of pod on node, the claim the
// plugin made for pod's extended resources there, with its allocation in flight; nil
// when the node serves them itself (device plugin) or pod asks for none. The
// allocation in flight is released: the caller assumes the claim on the snapshot.
func (c *Cycle) reserveExtended(pod *corev1.Pod, node string) (*ClaimAllocation, error) {
	claim, mappings, err := extendedOf(c.state, node)
	if err != nil || claim == nil {
		return nil, err
	}
	tracker := c.h.dra.ResourceClaims()
	alloc := tracker.GetPendingAllocation(claim.UID)
	if alloc == nil {
		return nil, fmt.Errorf("the claim for %s/%s's extended resources has no allocation after Reserve", pod.Namespace, pod.Name)
	}
	alloc = alloc.DeepCopy()
	tracker.MaybeRemoveClaimPendingAllocation(claim.UID, true)
	return &ClaimAllocation{
		Name: ExtendedClaimName(pod), UID: claim.UID, Allocation: alloc,
		Extended: &ExtendedClaim{Spec: *claim.Spec.DeepCopy(), Mappings: mappings},
	}, nil
}

// extendedOf reads the DynamicResources plugin's claim for the pod's extended resources
// on node, and its container mappings, from the plugin's cycle state. The plugin keeps
// them unexported (its PreBind writes them); reading them by reflection takes the
// plugin's own requests and allocation rather than making them again. A field renamed
// upstream is an error here, and TestExtendedResourceAllocated fails.
func extendedOf(state *framework.CycleState, node string) (*resourcev1.ResourceClaim, []corev1.ContainerExtendedResourceRequest, error) {
	data, err := state.Read(names.DynamicResources)
	if err != nil {
		return nil, nil, nil // the plugin had nothing to do for the pod
	}
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, nil, fmt.Errorf("kube-scheduler's DynamicResources: state %T is not a struct pointer", data)
	}
	allocs := v.Elem().FieldByName("nodeAllocations")
	if !allocs.IsValid() || allocs.Kind() != reflect.Map || allocs.Type().Key().Kind() != reflect.String {
		return nil, nil, fmt.Errorf("kube-scheduler's DynamicResources: state has no nodeAllocations by node name")
	}
	na := allocs.MapIndex(reflect.ValueOf(node))
	if !na.IsValid() {
		return nil, nil, nil
	}
	cf, mf := na.FieldByName("extendedResourceClaim"), na.FieldByName("containerResourceRequestMappings")
	if !cf.IsValid() || cf.Type() != reflect.TypeOf(&resourcev1.ResourceClaim{}) ||
		!mf.IsValid() || mf.Type() != reflect.TypeOf([]corev1.ContainerExtendedResourceRequest{}) {
		return nil, nil, fmt.Errorf("kube-scheduler's DynamicResources: nodeAllocation has no extendedResourceClaim and containerResourceRequestMappings")
	}
	if cf.IsNil() {
		return nil, nil, nil
	}
	// The values are read-only through reflect (unexported fields): their memory is
	// read in place and copied.
	claim := (*resourcev1.ResourceClaim)(unsafe.Pointer(cf.Pointer())).DeepCopy()
	var mappings []corev1.ContainerExtendedResourceRequest
	if mf.Len() > 0 {
		src := unsafe.Slice((*corev1.ContainerExtendedResourceRequest)(unsafe.Pointer(mf.Pointer())), mf.Len())
		mappings = append(mappings, src...)
	}
	return claim, mappings, nil
}

// assumeExtended shows ca, pod's extended claim, on snap as the binder will write it,
// allocated and reserved for pod, until it is observed allocated; undo removes it. The
// claim shown has no owner: the plugin, which takes a claim controlled by the pod it
// places for one left by an earlier attempt, would otherwise refuse every node to
// another member of pod's shape, placed with pod's cycle.
func assumeExtended(snap *cluster.Snapshot, pod *corev1.Pod, ca ClaimAllocation) func() {
	c := ExtendedClaimObject(pod, ca)
	c.UID, c.OwnerReferences = ca.UID, nil
	c.Status = ExtendedReservation(pod, ca)
	return snap.AssumeClaim(c)
}

// ExtendedStatus is the pod's status.extendedResourceClaimStatus for ca.
func ExtendedStatus(ca ClaimAllocation) *corev1.PodExtendedResourceClaimStatus {
	return &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: ca.Name, RequestMappings: ca.Extended.Mappings}
}
