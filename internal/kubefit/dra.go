package kubefit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	"github.com/muster-sched/muster/internal/cluster"
)

// newDRAManager builds kube-scheduler's own DRA manager over the host's informers: its
// claim tracker (an assume cache over the claims informer, with the allocations in
// flight), the ResourceSlice tracker, which shows the slices with the taints of the
// DeviceTaintRules that select their devices (as kube-scheduler v1.37 does, where
// DRADeviceTaintRules is on by default), and the DeviceClass lister.
func (h *Host) newDRAManager(ctx context.Context, factory informers.SharedInformerFactory) (*dynamicresources.DefaultDRAManager, error) {
	claims := assumecache.NewAssumeCache(klog.FromContext(ctx), h.informers[claimType], "ResourceClaim", "", nil)
	slices, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{
		EnableDeviceTaintRules: true,
		SliceInformer:          factory.Resource().V1().ResourceSlices(),
		TaintInformer:          factory.Resource().V1().DeviceTaintRules(),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the ResourceSlice tracker: %w", err)
	}
	return dynamicresources.NewDRAManager(ctx, claims, slices, factory), nil
}

// claimVersions gives the claims loaded into the informers versions of their own: the
// claim tracker's assume cache takes an object only when its resourceVersion is newer
// than the one it holds, and a claim the engine assumed allocated (cluster
// Snapshot.AssumeClaim) keeps the version of the claim observed.
type claimVersions struct {
	next uint64
	// copies maps each claim loaded, by the snapshot's object, to the copy given to the
	// informer.
	copies map[*resourcev1.ResourceClaim]*resourcev1.ResourceClaim
}

// of returns the informer's copy of each claim, versioned in the order they change.
func (v *claimVersions) of(claims map[string]*resourcev1.ResourceClaim) []runtime.Object {
	if v.copies == nil {
		v.copies = map[*resourcev1.ResourceClaim]*resourcev1.ResourceClaim{}
	}
	next := make(map[*resourcev1.ResourceClaim]*resourcev1.ResourceClaim, len(claims))
	out := make([]runtime.Object, 0, len(claims))
	for _, c := range claims {
		cp, ok := v.copies[c]
		if !ok {
			v.next++
			shallow := *c
			shallow.ResourceVersion = strconv.FormatUint(v.next, 10)
			cp = &shallow
		}
		next[c] = cp
		out = append(out, cp)
	}
	v.copies = next
	return out
}

// HasResourceClaims reports whether pod asks for DRA devices through ResourceClaims.
func HasResourceClaims(pod *corev1.Pod) bool { return len(pod.Spec.ResourceClaims) > 0 }

// ClaimAllocation is one of a member's ResourceClaims as its plan step writes it: the
// claim (in the member's namespace), and the devices to allocate to it, or nil when it is
// allocated already (the member only adds itself to its reservations).
type ClaimAllocation struct {
	// PodClaim is the name of the claim's entry in the pod's spec.resourceClaims.
	PodClaim string
	// Name and UID are the ResourceClaim's.
	Name string
	UID  types.UID
	// Allocation is the allocation to write, nil when the claim has one.
	Allocation *resourcev1.AllocationResult
	// Consumer, when set, is whom the claim is reserved for instead of the pod: the
	// PodGroup, for a claim of a native PodGroup's spec.resourceClaims.
	Consumer *resourcev1.ResourceClaimConsumerReference
	// Extended, when set, makes this the claim for the pod's extended resources backed
	// by DRA, which does not exist yet: the plan step creates it (PodClaim is empty, UID
	// is the plugin's until then).
	Extended *ExtendedClaim
}

// Reserve allocates pod's ResourceClaims on node n, as kube-scheduler's DynamicResources
// does in Reserve, with the devices of every claim the snapshot shows allocated counted
// (assumed ones included). The plugin's allocation in flight is released before Reserve
// returns: the caller assumes the claims on the snapshot (Assume), so that the members
// placed after pod see their devices taken, and shared claims allocated. The claims are
// returned in the pod's order.
func (c *Cycle) Reserve(pod *corev1.Pod, n *cluster.NodeInfo) ([]ClaimAllocation, error) {
	if c.rejected != nil {
		return nil, nil
	}
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	if err := c.h.load(c.snap); err != nil {
		return nil, err
	}
	if !HasResourceClaims(pod) && !c.extended { // pod is of c's shape: the same requests
		return nil, nil
	}
	// Filter again on n: its allocation for n is the one Reserve takes, and it may have
	// been computed for another node last.
	info := c.h.current.info(n)
	if st := c.h.devices.Filter(background, c.state, pod, info); !st.IsSuccess() {
		return nil, fmt.Errorf("DynamicResources on node %s: %s", n.Name(), st.Message())
	}
	if st := c.h.devices.Reserve(background, c.state, pod, n.Name()); !st.IsSuccess() {
		return nil, fmt.Errorf("DynamicResources Reserve on node %s: %w", n.Name(), st.AsError())
	}
	claims, pending, err := c.h.allocations(c.snap, pod)
	tracker := c.h.dra.ResourceClaims()
	for _, ca := range pending {
		if tracker.MaybeRemoveClaimPendingAllocation(ca.UID, true) {
			tracker.AssumedClaimRestore(pod.Namespace, ca.Name)
		}
	}
	ext, extErr := c.reserveExtended(pod, n.Name())
	if ext != nil {
		claims = append(claims, *ext)
	}
	if err == nil {
		err = extErr
	}
	return claims, err
}

// Assume shows pod's claims on snap as its plan step writes them: allocated as claims
// says, and reserved for pod. undo shows them as before; undos run in reverse order.
func Assume(snap *cluster.Snapshot, pod *corev1.Pod, claims []ClaimAllocation) (undo func(), err error) {
	var undos []func()
	undo = func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	for _, ca := range claims {
		if ca.Extended != nil {
			undos = append(undos, assumeExtended(snap, pod, ca))
			continue
		}
		claim, err := Allocated(snap.ResourceClaim(pod.Namespace+"/"+ca.Name), pod, ca)
		if err != nil {
			undo()
			return nil, err
		}
		undos = append(undos, snap.AssumeClaim(claim))
	}
	return undo, nil
}

// Allocated is claim as ca's step leaves it: with ca's allocation when it has none, and
// reserved for pod. claim is not changed.
func Allocated(claim *resourcev1.ResourceClaim, pod *corev1.Pod, ca ClaimAllocation) (*resourcev1.ResourceClaim, error) {
	if claim == nil || claim.UID != ca.UID {
		return nil, fmt.Errorf("resourceclaim %s/%s (uid %s): not found", pod.Namespace, ca.Name, ca.UID)
	}
	var pc *corev1.PodResourceClaim
	for i := range pod.Spec.ResourceClaims {
		if pod.Spec.ResourceClaims[i].Name == ca.PodClaim {
			pc = &pod.Spec.ResourceClaims[i]
		}
	}
	if pc == nil {
		return nil, fmt.Errorf("pod %s/%s has no spec.resourceClaims entry %q", pod.Namespace, pod.Name, ca.PodClaim)
	}
	ref, err := resourceclaim.BindTo(pod, nil, pc)
	if err != nil {
		return nil, err
	}
	if ca.Consumer != nil {
		ref = *ca.Consumer
	}
	out := claim.DeepCopy()
	if out.Status.Allocation == nil {
		if ca.Allocation == nil {
			return nil, fmt.Errorf("resourceclaim %s/%s: not allocated, and the plan has no allocation for it", pod.Namespace, ca.Name)
		}
		out.Status.Allocation = ca.Allocation.DeepCopy()
	}
	for _, r := range out.Status.ReservedFor {
		if r.UID == ref.UID {
			return out, nil
		}
	}
	out.Status.ReservedFor = append(out.Status.ReservedFor, ref)
	return out, nil
}

// allocations reads pod's claims after Reserve: each claim's allocation in flight, or
// none for a claim allocated already. pending are the claims with an allocation in
// flight.
func (h *Host) allocations(snap *cluster.Snapshot, pod *corev1.Pod) (all, pending []ClaimAllocation, err error) {
	tracker := h.dra.ResourceClaims()
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, _, err := resourceclaim.Name(pod, pc)
		if err != nil {
			return all, pending, err
		}
		if name == nil {
			continue
		}
		claim := snap.ResourceClaim(pod.Namespace + "/" + *name)
		if claim == nil {
			return all, pending, fmt.Errorf("resourceclaim %s/%s: not found", pod.Namespace, *name)
		}
		ca := ClaimAllocation{PodClaim: pc.Name, Name: claim.Name, UID: claim.UID}
		if claim.Status.Allocation == nil {
			ca.Allocation = tracker.GetPendingAllocation(claim.UID)
			if ca.Allocation == nil {
				return all, pending, errors.New("resourceclaim " + pod.Namespace + "/" + claim.Name + ": no allocation after Reserve")
			}
			pending = append(pending, ca)
		}
		all = append(all, ca)
	}
	return all, pending, nil
}

// ClaimsOf returns the ResourceClaims pod refers to, from snap, in the pod's order, and
// the entries of spec.resourceClaims whose claim does not exist yet (a template's claim
// not made yet, or a named claim missing).
func ClaimsOf(snap *cluster.Snapshot, pod *corev1.Pod) (claims []*resourcev1.ResourceClaim, missing []string) {
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, _, err := resourceclaim.Name(pod, pc)
		if err != nil {
			missing = append(missing, pc.Name)
			continue
		}
		if name == nil {
			continue
		}
		claim := snap.ResourceClaim(pod.Namespace + "/" + *name)
		if claim == nil {
			missing = append(missing, pc.Name)
			continue
		}
		claims = append(claims, claim)
	}
	return claims, missing
}

// SelectorCount counts the narrowing in what pod's ResourceClaims not allocated yet ask
// for: their requests' CEL selectors (a request with alternatives, those of its first)
// and their constraints. Placement allocates the claims that narrow the most first
// when a group did not fit in its first order (see placement's otherOrders).
func SelectorCount(snap *cluster.Snapshot, pod *corev1.Pod) int {
	n := 0
	for _, c := range pendingClaims(snap, pod) {
		for _, r := range c.Spec.Devices.Requests {
			switch {
			case r.Exactly != nil:
				n += len(r.Exactly.Selectors)
			case len(r.FirstAvailable) > 0:
				n += len(r.FirstAvailable[0].Selectors)
			}
		}
		n += len(c.Spec.Devices.Constraints)
	}
	return n
}

// pendingClaims returns pod's ResourceClaims that exist and are not allocated yet.
func pendingClaims(snap *cluster.Snapshot, pod *corev1.Pod) []*resourcev1.ResourceClaim {
	if !HasResourceClaims(pod) {
		return nil
	}
	claims, _ := ClaimsOf(snap, pod)
	return slices.DeleteFunc(claims, func(c *resourcev1.ResourceClaim) bool { return c.Status.Allocation != nil })
}

// ClaimNeeds describes what pod's ResourceClaims not allocated yet ask for, for
// diagnoses: each claim with its requests' device classes, counts and selectors, and
// its constraints, e.g. "claim ml/w0-gpu: request gpus: 2 of class gpu.nvidia.com where
// device.attributes["gpu.nvidia.com"].productName == "H100"". A claim made from a
// template is named by the template ("claims of template ml/one-gpu: …"), so that the
// members of gangs made from one template are described alike. It is "" when every claim
// is allocated.
func ClaimNeeds(snap *cluster.Snapshot, pod *corev1.Pod) string {
	var parts []string
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, _, err := resourceclaim.Name(pod, pc)
		if err != nil || name == nil {
			if err != nil {
				parts = append(parts, fmt.Sprintf("spec.resourceClaims %q: its ResourceClaim does not exist yet", pc.Name))
			}
			continue
		}
		c := snap.ResourceClaim(pod.Namespace + "/" + *name)
		if c == nil {
			parts = append(parts, fmt.Sprintf("spec.resourceClaims %q: ResourceClaim %s does not exist yet", pc.Name, *name))
			continue
		}
		if c.Status.Allocation != nil {
			continue
		}
		what := fmt.Sprintf("claim %s/%s", c.Namespace, c.Name)
		if pc.ResourceClaimTemplateName != nil {
			what = fmt.Sprintf("claims of template %s/%s", c.Namespace, *pc.ResourceClaimTemplateName)
		}
		parts = append(parts, what+": "+strings.Join(claimRequests(c), ", "))
	}
	return strings.Join(parts, "; ")
}

// claimRequests describes a claim's requests and constraints.
func claimRequests(c *resourcev1.ResourceClaim) []string {
	var reqs []string
	for _, r := range c.Spec.Devices.Requests {
		switch {
		case r.Exactly != nil:
			reqs = append(reqs, "request "+r.Name+": "+exactNeed(r.Exactly.DeviceClassName, r.Exactly.AllocationMode, r.Exactly.Count, r.Exactly.Selectors))
		case len(r.FirstAvailable) > 0:
			var alts []string
			for _, sr := range r.FirstAvailable {
				alts = append(alts, sr.Name+": "+exactNeed(sr.DeviceClassName, sr.AllocationMode, sr.Count, sr.Selectors))
			}
			reqs = append(reqs, "request "+r.Name+": first available of "+strings.Join(alts, " | "))
		}
	}
	for _, k := range c.Spec.Devices.Constraints {
		if k.MatchAttribute != nil {
			reqs = append(reqs, fmt.Sprintf("all with the same %s", *k.MatchAttribute))
		}
	}
	return reqs
}

func exactNeed(class string, mode resourcev1.DeviceAllocationMode, count int64, selectors []resourcev1.DeviceSelector) string {
	n := fmt.Sprint(count)
	if mode == resourcev1.DeviceAllocationModeAll {
		n = "all"
	} else if count == 0 {
		n = "1"
	}
	out := n + " of class " + class
	var cel []string
	for _, s := range selectors {
		if s.CEL != nil {
			cel = append(cel, s.CEL.Expression)
		}
	}
	if len(cel) > 0 {
		out += " where " + strings.Join(cel, " && ")
	}
	return out
}

// DeviceCounts is what pod's ResourceClaims charge to a Queue's quota, per DeviceClass
// (a quota names a class as a resource, e.g. gpu.nvidia.com: 64), as Kueue counts
// devices: an allocated claim counts the devices allocated to each request, an
// unallocated one each request's count (one for a request of all matching devices,
// whose number is known only once allocated). Claims in seen are skipped, and the
// pod's are added to it: a claim shared by members is charged once.
func DeviceCounts(snap *cluster.Snapshot, pod *corev1.Pod, seen map[string]bool) cluster.Resources {
	return deviceCounts(snap, pod, seen, true, nil, 0)
}

// Alternatives returns the most alternatives (firstAvailable) a request of pod's
// ResourceClaims not allocated yet lists, one when none lists any: the forecast plans the
// pod with each (PendingDevices' alt).
func Alternatives(snap *cluster.Snapshot, pod *corev1.Pod) int {
	n := 1
	for _, c := range pendingClaims(snap, pod) {
		for _, r := range c.Spec.Devices.Requests {
			n = max(n, len(r.FirstAvailable))
		}
	}
	return n
}

// deviceCounts is DeviceCounts, of the allocated claims too when allocated is true. A
// request of all matching devices counts all[class] when that is set, else one. A
// request with alternatives (firstAvailable) counts its alt-th, or its last if it has
// fewer.
func deviceCounts(snap *cluster.Snapshot, pod *corev1.Pod, seen map[string]bool, allocated bool, all cluster.Resources, alt int) cluster.Resources {
	if !HasResourceClaims(pod) {
		return nil
	}
	claims, _ := ClaimsOf(snap, pod)
	var out cluster.Resources
	add := func(class string, n int64) {
		if out == nil {
			out = cluster.Resources{}
		}
		out[corev1.ResourceName(class)] += n
	}
	for _, c := range claims {
		key := c.Namespace + "/" + c.Name
		if seen[key] {
			continue
		}
		seen[key] = true
		if a := c.Status.Allocation; a != nil {
			if !allocated {
				continue
			}
			classOf := requestClasses(c)
			for _, res := range a.Devices.Results {
				add(classOf[res.Request], 1)
			}
			continue
		}
		for _, r := range c.Spec.Devices.Requests {
			switch {
			case r.Exactly != nil && r.Exactly.AllocationMode == resourcev1.DeviceAllocationModeAll:
				add(r.Exactly.DeviceClassName, max(all[corev1.ResourceName(r.Exactly.DeviceClassName)], 1))
			case r.Exactly != nil:
				add(r.Exactly.DeviceClassName, max(r.Exactly.Count, 1))
			case len(r.FirstAvailable) > 0:
				sub := r.FirstAvailable[min(alt, len(r.FirstAvailable)-1)]
				if sub.AllocationMode == resourcev1.DeviceAllocationModeAll {
					add(sub.DeviceClassName, max(all[corev1.ResourceName(sub.DeviceClassName)], 1))
				} else {
					add(sub.DeviceClassName, max(sub.Count, 1))
				}
			}
		}
	}
	return out
}
