package kubefit

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	"github.com/muster-sched/muster/internal/cluster"
)

// newDRAManager builds kube-scheduler's own DRA manager over the host's informers: its
// claim tracker (an assume cache over the claims informer, with the allocations in
// flight), the ResourceSlice lister and the DeviceClass lister. DeviceTaintRules are not
// read: muster does not watch them.
func (h *Host) newDRAManager(ctx context.Context, factory informers.SharedInformerFactory) (*dynamicresources.DefaultDRAManager, error) {
	claims := assumecache.NewAssumeCache(klog.FromContext(ctx), h.informers[claimType], "ResourceClaim", "", nil)
	slices, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{
		SliceInformer: factory.Resource().V1().ResourceSlices(),
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

// GroupState is what the members of one group share while it is placed: the plugins'
// PodGroup cycle state, in which DynamicResources lets members share a claim whose
// allocation an earlier member made in the same attempt.
type GroupState struct{ cs *framework.CycleState }

// NewGroupState starts the shared state of one placement attempt.
func NewGroupState() *GroupState { return &GroupState{cs: framework.NewCycleState()} }

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
}

// Reserve allocates pod's ResourceClaims on node n, as kube-scheduler's DynamicResources
// does in Reserve, with the devices of every claim allocated or reserved before counted.
// The allocations stay in flight, so the members placed after pod see their devices
// taken, until revert. The claims are returned in the pod's order.
func (c *Cycle) Reserve(pod *corev1.Pod, n *cluster.NodeInfo) ([]ClaimAllocation, func(), error) {
	if c.rejected != nil || !HasResourceClaims(pod) {
		return nil, func() {}, nil
	}
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	if err := c.h.load(c.snap); err != nil {
		return nil, nil, err
	}
	// Filter again on n: its allocation for n is the one Reserve takes, and it may have
	// been computed for another node last.
	info := c.h.current.info(n)
	if st := c.h.devices.Filter(background, c.state, pod, info); !st.IsSuccess() {
		return nil, nil, fmt.Errorf("DynamicResources on node %s: %s", n.Name(), st.Message())
	}
	if st := c.h.devices.Reserve(background, c.state, pod, n.Name()); !st.IsSuccess() {
		return nil, nil, fmt.Errorf("DynamicResources Reserve on node %s: %w", n.Name(), st.AsError())
	}
	claims, pending, err := c.h.allocations(c.snap, pod)
	tracker := c.h.dra.ResourceClaims()
	revert := func() {
		c.h.mu.Lock()
		defer c.h.mu.Unlock()
		for _, ca := range pending {
			if tracker.MaybeRemoveClaimPendingAllocation(ca.UID, false) {
				tracker.AssumedClaimRestore(pod.Namespace, ca.Name)
			}
		}
	}
	if err != nil {
		revert()
		return nil, nil, err
	}
	return claims, revert, nil
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
