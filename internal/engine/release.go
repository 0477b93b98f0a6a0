package engine

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/placement"
)

// claimRelease tells which DRA ResourceClaims a set of preemption victims gives back:
// the allocated claims of their members (those made for their extended resources
// too) that are reserved for none but those members, or their PodGroups (a native
// PodGroup's own claims, which muster releases when it evicts the group). Once the
// members are gone, the resourceclaim controller takes them out of the claims'
// reservations and deallocates a claim reserved for no one, so a preemptor that needs
// devices counts on those of such claims.
type claimRelease struct {
	// claims are, by candidate, the allocated claims its members refer to.
	claims map[*group][]*resourcev1.ResourceClaim
	// consumers maps the UID of each candidate's members, and of its PodGroup's claim
	// consumer, to the candidate.
	consumers map[types.UID]*group
	// released are, by claim key, the claims as deallocated, made once.
	released map[string]*resourcev1.ResourceClaim
}

// claimRelease returns the claims candidates' members refer to, nil when none refers to
// an allocated claim: a preemption without devices costs nothing more.
func (e *Engine) claimRelease(candidates []*group) *claimRelease {
	var r *claimRelease
	for _, g := range candidates {
		for _, key := range g.memberKeys() {
			p := g.members[key]
			if !kubefit.HoldsDevices(p) {
				continue
			}
			for _, c := range kubefit.HeldClaims(e.snap, p) {
				if c.Status.Allocation == nil || len(c.Status.ReservedFor) == 0 {
					continue
				}
				if r == nil {
					r = &claimRelease{claims: map[*group][]*resourcev1.ResourceClaim{}, consumers: map[types.UID]*group{},
						released: map[string]*resourcev1.ResourceClaim{}}
				}
				if !slices.Contains(r.claims[g], c) {
					r.claims[g] = append(r.claims[g], c)
				}
			}
		}
	}
	if r == nil {
		return nil
	}
	for _, g := range candidates {
		for _, p := range g.members {
			r.consumers[p.UID] = g
		}
		if c := g.spec.ClaimConsumer; c != nil {
			r.consumers[c.UID] = g
		}
	}
	return r
}

// freedBy returns the claims evicting victims gives back, in the order found: those
// of their members every consumer of which is one of the victims'.
func (r *claimRelease) freedBy(victims []*group) []*resourcev1.ResourceClaim {
	if r == nil {
		return nil
	}
	var out []*resourcev1.ResourceClaim
	for _, v := range victims {
		for _, c := range r.claims[v] {
			if !slices.Contains(out, c) && r.onlyFor(c, victims) {
				out = append(out, c)
			}
		}
	}
	return out
}

// onlyFor reports whether every consumer c is reserved for belongs to one of victims.
func (r *claimRelease) onlyFor(c *resourcev1.ResourceClaim, victims []*group) bool {
	for _, ref := range c.Status.ReservedFor {
		if g := r.consumers[ref.UID]; g == nil || !slices.Contains(victims, g) {
			return false
		}
	}
	return true
}

// show shows on snap the claims evicting victims gives back as deallocated and reserved
// for no one, until undo is called. snap's objects are shared with the engine's
// snapshot: undo must run before the decision ends.
func (r *claimRelease) show(snap *cluster.Snapshot, victims []*group) (undo func()) {
	var undos []func()
	for _, c := range r.freedBy(victims) {
		key := c.Namespace + "/" + c.Name
		rel := r.released[key]
		if rel == nil {
			rel = c.DeepCopy()
			rel.Status.Allocation, rel.Status.ReservedFor = nil, nil
			r.released[key] = rel
		}
		undos = append(undos, snap.AssumeClaim(rel))
	}
	return func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
}

// givenClaim is a claim a preemption's victims give back, as it was when they were
// evicted.
type givenClaim struct {
	key string
	uid types.UID
	// holders are the consumers it was reserved for: the victims' members or PodGroups.
	holders []types.UID
}

// given returns the claims evicting victims gives back, by key.
func (r *claimRelease) given(victims []*group) []givenClaim {
	var out []givenClaim
	for _, c := range r.freedBy(victims) {
		g := givenClaim{key: c.Namespace + "/" + c.Name, uid: c.UID}
		for _, ref := range c.Status.ReservedFor {
			g.holders = append(g.holders, ref.UID)
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b givenClaim) int { return strings.Compare(a.key, b.key) })
	return out
}

// heldOn reports whether the claim is, on snap, still allocated for the victims: the
// same claim, allocated, and reserved for none but them (for no one, once their pods are
// gone and until the resourceclaim controller deallocates it). A claim deleted,
// deallocated, or reserved for a new consumer is given back.
func (c givenClaim) heldOn(snap *cluster.Snapshot) bool {
	cur := snap.ResourceClaim(c.key)
	if cur == nil || cur.UID != c.uid || cur.Status.Allocation == nil {
		return false
	}
	for _, ref := range cur.Status.ReservedFor {
		if !slices.Contains(c.holders, ref.UID) {
			return false
		}
	}
	return true
}

// claimsPending returns the keys of the claims the victims of key's preemption in
// flight give back that they still hold, sorted; nil when there is none.
func (e *Engine) claimsPending(key string) []string {
	pr := e.preempting[key]
	if pr == nil {
		return nil
	}
	var out []string
	for _, c := range pr.claims {
		if c.heldOn(e.snap) {
			out = append(out, c.key)
		}
	}
	return out
}

// heldBy returns what each candidate holds, for the choice among victim sets of one size
// (betterVictims): its members' requests and, when some candidate's members hold
// claims (release), the devices of those claims, per DeviceClass.
func (e *Engine) heldBy(candidates []*group, release *claimRelease) map[*group]cluster.Resources {
	held := requestsHeld(candidates)
	if release == nil {
		return held
	}
	for _, g := range candidates {
		if d := e.devicesHeld(g); d != nil {
			held[g] = withDevices(held[g], d)
		}
	}
	return held
}

// scarceFor is the resource a victim set should free the least of beyond the need: the
// DeviceClass the group's members ask the most devices of, when they ask for any, else
// the group's scarce resource (placement.Scarce).
func (e *Engine) scarceFor(g placement.Group) corev1.ResourceName {
	var devices cluster.Resources
	for _, d := range e.deviceCharges(g.Members) {
		if devices == nil {
			devices = cluster.Resources{}
		}
		devices.Add(d)
	}
	best, most := placement.Scarce(g), int64(0)
	for _, class := range slices.Sorted(maps.Keys(devices)) {
		if n := devices[class]; n > most {
			best, most = class, n
		}
	}
	return best
}
