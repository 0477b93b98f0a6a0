package engine

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
)

// deviceCharges are what the members' DRA claims charge to quota, by member, with what
// their extended resources backed by DRA charge beyond their requests
// (draExtended.charges); nil when none charges any. A claim shared by members is charged
// to the first.
func (e *Engine) deviceCharges(members []placement.Member) map[string]cluster.Resources {
	var out map[string]cluster.Resources
	seen := map[string]bool{}
	x := e.extendedClasses()
	for _, m := range members {
		var req cluster.Resources
		if len(x.onlyDRA) > 0 {
			if req = m.Requests; req == nil {
				req = cluster.PodRequests(m.Pod)
			}
		}
		if d := x.charges(req, kubefit.DeviceCounts(e.snap, m.Pod, seen)); d != nil {
			if out == nil {
				out = map[string]cluster.Resources{}
			}
			out[m.Name] = d
		}
	}
	return out
}

// devicesHeld is what the claims of g's members that hold a node charge to quota, with
// what their extended resources backed by DRA charge beyond their requests.
func (e *Engine) devicesHeld(g *group) cluster.Resources {
	x := e.extendedClasses()
	if !g.hasResourceClaims() && len(x.onlyDRA) == 0 {
		return nil // most groups: nothing to list or sort
	}
	var out cluster.Resources
	seen := map[string]bool{}
	for _, key := range g.memberKeys() {
		p := g.members[key]
		if terminal(p) || g.nodeOf(key, p) == "" {
			continue
		}
		if d := x.charges(g.requests[key], kubefit.DeviceCounts(e.snap, p, seen)); d != nil {
			if out == nil {
				out = cluster.Resources{}
			}
			out.Add(d)
		}
	}
	return out
}

// consumers sets, on the claims of member p that are the group's own (a native
// PodGroup's spec.resourceClaims, named alike in the member's spec.resourceClaims), the
// PodGroup as the consumer they are reserved for. claims is not changed.
func (s *GroupSpec) consumers(p *corev1.Pod, claims []kubefit.ClaimAllocation) []kubefit.ClaimAllocation {
	if len(s.GroupClaims) == 0 || s.ClaimConsumer == nil {
		return claims
	}
	out := slices.Clone(claims)
	for i := range out {
		for _, pc := range p.Spec.ResourceClaims {
			if pc.Name != out[i].PodClaim {
				continue
			}
			for _, gc := range s.GroupClaims {
				if gc.Name == pc.Name && ptr.Equal(gc.ResourceClaimName, pc.ResourceClaimName) &&
					ptr.Equal(gc.ResourceClaimTemplateName, pc.ResourceClaimTemplateName) {
					out[i].Consumer = s.ClaimConsumer
				}
			}
		}
	}
	return out
}

// claimReleases are the group's own claims (spec.resourceClaims of a native PodGroup that
// name a ResourceClaim) to release when the group is evicted. Claims a PodGroup makes
// from a template are not placed (see docs/concepts.md, "Devices (DRA)"): there is
// nothing of theirs to release.
func (s *GroupSpec) claimReleases(group string) []ClaimRelease {
	if s.ClaimConsumer == nil {
		return nil
	}
	var out []ClaimRelease
	for _, gc := range s.GroupClaims {
		if gc.ResourceClaimName != nil {
			out = append(out, ClaimRelease{Group: group, Namespace: s.Namespace, Claim: *gc.ResourceClaimName, Consumer: *s.ClaimConsumer})
		}
	}
	return out
}

// Claim releases asked again: the first after claimReleaseRetry, each next one twice as
// late, at most maxClaimReleaseRetry apart.
const (
	claimReleaseRetry    = 10 * time.Second
	maxClaimReleaseRetry = 5 * time.Minute
)

// retryClaimReleases asks again for the release of the groups' own claims an eviction
// asked to release (see evictAll) while the snapshot shows one still reserved for its
// group: the shell's release may have failed, and nothing else would send it again, so
// the claim's devices would stay allocated to a group that holds no node. A group's
// releases are asked for only while it has no placement and is in no phase that runs
// members: once a new attempt is placed, the claim is that attempt's, and a release
// then would undo its allocation (the consumer, the PodGroup, is the same). It runs
// after the Step's admission pass, so that a group placed by the pass is not asked a
// release in the same output; a group asked again leaves the queue until the release
// is seen done or reported failed (releaseInFlight).
func (e *Engine) retryClaimReleases(now time.Time, out *Output) {
	if len(e.releasing) == 0 {
		return
	}
	for _, key := range sortedKeys(e.releasing) {
		g := e.releasing[key]
		if e.groups[key] != g || !g.releasePending(e.snap) {
			g.releases = nil
			delete(e.releasing, key)
			continue
		}
		if !now.Before(g.releaseDue()) {
			out.ClaimReleases = append(out.ClaimReleases, g.releases...)
			g.releaseSent, g.releaseFailed = now, false
			g.releaseTries++
			e.unqueue(g) // while the ask is in flight (releaseInFlight)
		}
	}
}

// ClaimReleaseFailed reports that the shell's last ask to release the own claims of
// group failed: none of its releases is in flight, and the group may be placed on the
// claims as they are (a placement keeps a claim's allocation) until it is asked again.
func (e *Engine) ClaimReleaseFailed(group string) {
	if g := e.releasing[group]; g != nil && !g.releaseFailed {
		g.releaseFailed = true
		e.dirty[group] = true
	}
}

// releaseInFlight returns the own claims of g whose release is asked and not seen done:
// the snapshot still shows them reserved for g, and the shell has not reported the ask
// failed. g is not placed meanwhile: a placement counts on a claim's allocation as the
// snapshot shows it, and a release that lands after it would undo the allocation its
// members run with. (muster serve sends the releases off its loop, and the snapshot
// shows a release done only once the claim's watch says so.)
func (e *Engine) releaseInFlight(g *group) []string {
	if e.releasing[g.key] != g || g.releaseFailed {
		return nil
	}
	var out []string
	for _, r := range g.releases {
		if stillReserved(e.snap, r) {
			out = append(out, r.Namespace+"/"+r.Claim)
		}
	}
	return out
}

// stillReserved reports whether the snapshot shows r's claim still reserved for r's
// consumer.
func stillReserved(snap *cluster.Snapshot, r ClaimRelease) bool {
	c := snap.ResourceClaim(r.Namespace + "/" + r.Claim)
	return c != nil && reservedFor(c, r.Consumer.UID)
}

// releasedClaims marks changed the queued groups that wait for their claims to be
// released and see them released now, so that they are queued again (push); the Step
// then forgets their releases (retryClaimReleases).
func (e *Engine) releasedClaims() {
	for key, g := range e.releasing {
		if g.queued && !g.releaseFailed && e.groups[key] == g && len(e.releaseInFlight(g)) == 0 {
			e.dirty[key] = true
		}
	}
}

// releasePending reports whether g's claim releases are still to be asked for, and
// keeps those whose claim the snapshot shows reserved for g.
func (g *group) releasePending(snap *cluster.Snapshot) bool {
	switch g.state.Phase() {
	case lifecycle.Binding, lifecycle.Starting, lifecycle.Running, lifecycle.Recovering:
		return false
	}
	if g.placed != nil {
		return false
	}
	left := g.releases[:0]
	for _, r := range g.releases {
		if stillReserved(snap, r) {
			left = append(left, r)
		}
	}
	g.releases = left
	return len(left) > 0
}

// nextClaimRelease is when a group's claim releases are asked for again, zero if none
// is pending.
func (e *Engine) nextClaimRelease() time.Time {
	var next time.Time
	for _, g := range e.releasing {
		if at := g.releaseDue(); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// releaseDue is when the group's claim releases are asked for again, zero if none is
// pending.
func (g *group) releaseDue() time.Time {
	if len(g.releases) == 0 {
		return time.Time{}
	}
	return g.releaseSent.Add(min(claimReleaseRetry<<min(g.releaseTries-1, 8), maxClaimReleaseRetry))
}

// reservedFor reports whether claim is reserved for the consumer of uid.
func reservedFor(claim *resourcev1.ResourceClaim, uid types.UID) bool {
	return slices.ContainsFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == uid })
}

// deviceCensus is what the forecast counts of the nodes' DRA devices, per node and
// DeviceClass: how many each node has (kubefit.NodeDevices), counted again when the
// ResourceSlices or DeviceClasses change, and how many claims hold
// (kubefit.ClaimedDevices), counted again when any object changes.
type deviceCensus struct {
	counted            bool
	devicesGen, objGen uint64
	total, claimed     map[string]cluster.Resources
	// fewest is, per DeviceClass, the fewest devices of it a node with any has
	// (kubefit.FewestDevices): what a request of all of them takes at least.
	fewest cluster.Resources
	// nodesOf keeps, by request, the nodes whose devices can serve it
	// (kubefit.DeviceNodes), until the devices change.
	nodesOf map[string][]string
}

// maxRequestNodes bounds the requests whose nodes a census keeps: claims are tenants'
// objects, and each distinct selector would otherwise be kept until the devices change.
const maxRequestNodes = 1024

// requestNodes returns the census's memo of the nodes that can serve each request,
// emptied when it has reached maxRequestNodes (the lists found stay valid for those who
// hold them).
func (d *deviceCensus) requestNodes() map[string][]string {
	if d.nodesOf == nil || len(d.nodesOf) >= maxRequestNodes {
		d.nodesOf = map[string][]string{}
	}
	return d.nodesOf
}

// count returns the census of objs, counted again if they changed since.
func (d *deviceCensus) count(objs *cluster.Objects) *deviceCensus {
	if !d.counted || d.devicesGen != objs.DevicesGeneration() {
		d.total, d.devicesGen = kubefit.NodeDevices(objs), objs.DevicesGeneration()
		d.fewest, d.nodesOf = kubefit.FewestDevices(d.total), nil
	}
	if !d.counted || d.objGen != objs.Generation() {
		d.claimed, d.objGen = nil, objs.Generation()
		if d.total != nil {
			d.claimed = kubefit.ClaimedDevices(objs)
		}
	}
	d.counted = true
	return d
}

// withDevices returns r with the device counts d added, as a new map when d has any.
func withDevices(r, d cluster.Resources) cluster.Resources {
	if len(d) == 0 {
		return r
	}
	out := r.Clone()
	if out == nil {
		out = cluster.Resources{}
	}
	out.Add(d)
	return out
}

// claimsNotMade names the member of g (the first by key) whose pod refers to a
// ResourceClaim that does not exist yet (a template's claim the resourceclaim
// controller has not made), and that claim, or "" when every claim exists. Until they
// do, what the members ask for is unknown: planned without their devices, a group that
// waits for devices would be expected to start at once.
func (e *Engine) claimsNotMade(g *group) string {
	if !g.hasResourceClaims() {
		return ""
	}
	var first, claim string // the first such member by key, so that the answer is stable
	for key, p := range g.members {
		if p == nil || !kubefit.HasResourceClaims(p) || first != "" && key > first {
			continue
		}
		if _, missing := kubefit.ClaimsOf(e.snap, p); len(missing) > 0 {
			first, claim = key, missing[0]
		}
	}
	if first == "" {
		return ""
	}
	return "pod " + g.members[first].Name + "'s ResourceClaim " + claim + " is not created yet"
}
