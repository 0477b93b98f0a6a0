package engine

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// group is the engine's record of one group.
type group struct {
	key     string
	spec    GroupSpec
	hasSpec bool
	removed bool
	// removedMembers are the members when the group's object (or last pod) went, and
	// respecified says an object of the same name came since (see Engine.renew).
	removedMembers map[string]bool
	respecified    bool
	members        map[string]*corev1.Pod
	// requests are each member's resource requests, computed when the member is set.
	requests map[string]cluster.Resources
	// pending maps members whose bind was issued but not yet observed to their node.
	pending map[string]string
	// assumed maps members whose DRA claims the snapshot shows allocated by their plan
	// step, until their bind is observed, to the undo of that assumption.
	assumed map[string]func()
	// evicting holds members the engine asked to delete; they are never placed again.
	evicting map[string]bool
	// placed holds the members placed in the current attempt (see lifecycle.Observe.Placed).
	placed map[string]bool
	// releases are the group's own claims an eviction asked to release and the group
	// has not seen released yet, releaseSent when they were last asked for and
	// releaseTries how many times (see retryClaimReleases). releaseFailed says the
	// shell reported the last ask failed (ClaimReleaseFailed): no release is in flight.
	releases      []ClaimRelease
	releaseSent   time.Time
	releaseTries  int
	releaseFailed bool

	started bool
	state   lifecycle.State
	// armed is the wake-up last pushed on the engine's timer heap.
	armed  time.Time
	policy lifecycle.Policy

	queued   bool
	requeued bool
	queuedAt time.Time
	// waiting is why the group is not admitted, as the last admission pass that listed
	// it said: nil, or waitingOf, which holds it without a heap copy per pass (see
	// setWaiting). A pass lists a group when its kind of reason changes; while it is
	// queued, the queue has the reason it has now (see Engine.waitingNow).
	waiting     *queue.Reason
	waitingOf   queue.Reason
	waitingKind string
	// kindAt is when waitingKind was last reported, and reported the reason then; flipAt,
	// when set, is when a flip held back since (see flipQuiet) is looked at again.
	kindAt, flipAt time.Time
	reported       queue.Reason
	// membersGen counts the changes to members; declared is what they declared of their
	// run time at one count (see membersRuntime).
	membersGen uint64
	declared   declaredRuntime
	// claims says whether a member has ResourceClaims, as read when membersGen was
	// claimsGen-1; claimsGen is zero until it is first read (see hasResourceClaims).
	claimsGen uint64
	claims    bool
	// touched is the Engine.steps of the last Step that listed the group in
	// Output.Changed.
	touched uint64
	// changedFor numbers the forecast's read of the nodes that was next when the group
	// last changed in a way it reads (see forecastState.noteChanged).
	changedFor uint64
	// onNodes are the forecast's records of the nodes whose members, when last read,
	// included one of the group's: a change of the group marks them (noteChanged). A
	// record the group has since left stays, and is only read again for nothing; one
	// the forecast dropped goes at the group's next change.
	onNodes []*nodePods
	// rules is what the forecast read of the rules of the group's members (see
	// Engine.rulesOf).
	rules memberRules
	// heldAmounts is what the members held at the last observe, and heldList the same
	// as the list observe reports: a group is observed on every advance, and what it
	// holds rarely changes between two.
	heldAmounts cluster.Resources
	heldList    corev1.ResourceList
	// resolved holds the reasons resolve made last, the newest at index newest: they
	// trade places without being copied.
	resolved [2]resolvedReason
	newest   uint8
	// invalid is the last reported list of spec problems, to report each once.
	invalid string
	// domain is the required-topology value the group's members use.
	domain string
	// heldReported is the HeldBeforeReady already reported in an Output, read when its
	// count of changes was heldSeen.
	heldReported map[corev1.ResourceName]float64
	heldSeen     uint64
	// awaitsPods is set when muster evicted every member of a group defined by its pods
	// (Labels, Single) and cleared when the group is admitted again: the pods are
	// expected back, created again by their owner (or by muster, for pods without one).
	awaitsPods bool
	// emptySince is when such a group last lost its last member; zero while it has one.
	emptySince time.Time
	// evictedOwner, for a group with an object, is the UID of the member pod that owned
	// the object (GroupSpec.ObjectOwner) when muster last evicted every member, other than
	// to cancel the group. objectGone says the object owned by that pod went since: the
	// group keeps its state, out of the queue, for emptyRetention from goneSince, and an
	// object of the same name resumes it (see Engine.RemoveGroup).
	evictedOwner types.UID
	objectGone   bool
	goneSince    time.Time
	// runningSince is when the current attempt's group last became Running.
	runningSince time.Time
	// runFor is how long the attempt was expected to run when it became Running (see
	// runtimeOf), zero when unknown: its expected end is runningSince plus runFor.
	runFor time.Duration
	// handedOff is set when the group's state is kept by its owner from now on (see
	// Engine.HandOff): the group leaves the engine with its last pod, without a cancel.
	handedOff bool
}

// emptyRetention is how long a group defined by its pods keeps its state (attempts,
// failures, a Failed verdict) after muster evicted its last pod, waiting for the pods to
// come back. A Job's controller creates them again after its own back-off for failed
// pods, which reaches 6 minutes.
const emptyRetention = 10 * time.Minute

// definedByPods reports whether the group has no object: its pods are all there is.
func (g *group) definedByPods() bool {
	return g.hasSpec && (g.spec.Source == Labels || g.spec.Source == Single)
}

// retained reports whether a group defined by its pods outlives its last pod at now, or
// a group with an object its object: muster evicted the pods (for an object group, the
// pod that owned the object among them), and until emptyRetention has passed the pods,
// or the object, that come back under its name resume it (its attempts and failures, or
// its Failed verdict) instead of starting a group anew. A group admitted since, or
// cancelled or finished, is not kept.
func (g *group) retained(now time.Time) bool {
	evicted, since := g.awaitsPods, g.emptySince
	if !g.definedByPods() {
		evicted, since = g.objectGone && g.evictedOwner != "", g.goneSince
	}
	if !g.started || !evicted || !now.Before(since.Add(emptyRetention)) {
		return false
	}
	switch g.state.Phase() {
	case lifecycle.Backoff, lifecycle.Gathering, lifecycle.Queued, lifecycle.Failed:
		return true
	}
	return false
}

// wakeAt is when the group must be looked at again: its state's next deadline, or the end
// of its retention while it has no member, or no object, whichever is first.
func (g *group) wakeAt() time.Time {
	w := g.state.WakeAt()
	var since time.Time
	switch {
	case g.objectGone:
		since = g.goneSince
	case g.definedByPods() && len(g.members) == 0 && g.awaitsPods:
		since = g.emptySince
	}
	if since.IsZero() {
		return w
	}
	if end := since.Add(emptyRetention); w.IsZero() || end.Before(w) {
		return end
	}
	return w
}

// hasPod reports whether one of the group's member pods has uid.
func (g *group) hasPod(uid types.UID) bool {
	for _, p := range g.members {
		if p.UID == uid {
			return true
		}
	}
	return false
}

// memberKeys returns the group's member pod keys, sorted.
func (g *group) memberKeys() []string {
	keys := make([]string, 0, len(g.members))
	for k := range g.members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// hasResourceClaims reports whether a member pod has ResourceClaims, read again only
// when the members changed: every forecast asks it of every queued group.
func (g *group) hasResourceClaims() bool {
	if g.claimsGen != g.membersGen+1 {
		g.claims = false
		for _, p := range g.members {
			if p != nil && kubefit.HasResourceClaims(p) {
				g.claims = true
				break
			}
		}
		g.claimsGen = g.membersGen + 1
	}
	return g.claims
}

// live reports whether a member pod still counts: it exists and has not failed.
func live(p *corev1.Pod) bool { return p.Status.Phase != corev1.PodFailed }

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// podReady counts a Succeeded member as Ready: it did its part.
func podReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || cluster.PodReady(p)
}

// nodeOf returns where a member is, or is being, bound.
func (g *group) nodeOf(key string, p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	return g.pending[key]
}

// observe counts the group's members for the lifecycle.
func (g *group) observe() (lifecycle.Observe, cluster.Resources) {
	var o lifecycle.Observe
	held := cluster.Resources{}
	for key, p := range g.members {
		if !live(p) {
			o.Failed++
			continue
		}
		if p.DeletionTimestamp != nil || g.evicting[key] {
			// Going away: no longer a member, though it holds its node until it is gone.
			if g.nodeOf(key, p) != "" && !terminal(p) {
				held.Add(g.requests[key])
			}
			continue
		}
		o.Members++
		if p.Status.Phase == corev1.PodSucceeded {
			o.Succeeded++
		}
		if podReady(p) {
			o.Ready++
		}
		if g.nodeOf(key, p) != "" {
			o.Bound++
			if !terminal(p) {
				held.Add(g.requests[key])
			}
		}
	}
	delete(held, corev1.ResourcePods)
	o.Held = g.heldAsList(held)
	g.observePlaced(&o)
	o.TaskMissing, o.TaskNotReady = g.taskMissing(), g.taskNotReady()
	return o, held
}

// heldAsList returns held as a list, the one made at an earlier observe if it held the
// same. The list is shared: its readers must not modify it (lifecycle.Step copies what
// it keeps).
func (g *group) heldAsList(held cluster.Resources) corev1.ResourceList {
	if g.heldList == nil || !g.heldAmounts.Equal(held) {
		g.heldAmounts, g.heldList = held.Clone(), held.List()
	}
	return g.heldList
}

// observePlaced counts the members placed in the current attempt and those of them that
// failed on their own with no controller to replace them, and describes the first of
// those (by key). A failed member with a controller (a Job's pod) is left to it: the
// replacement it creates is placed alone, within the start timeout.
func (g *group) observePlaced(o *lifecycle.Observe) {
	var failed []string
	// left counts, per task, the placed members not failed, when the group has task
	// minimums.
	var left map[string]int
	if len(g.spec.TaskMinimums) > 0 {
		left = map[string]int{}
	}
	for key := range g.placed {
		p := g.members[key]
		if p == nil {
			continue // deleted: its controller's to replace, or gone with an eviction
		}
		o.Placed++
		switch {
		case g.failedForGood(key, p):
			failed = append(failed, key)
		case left != nil:
			left[taskOf(p)]++
		}
	}
	if len(failed) == 0 {
		return
	}
	slices.Sort(failed)
	o.PlacedFailed = len(failed)
	o.Failure = failed[0] + ": " + cluster.PodFailure(g.members[failed[0]])
	o.TaskFailed = g.taskFailed(failed, left)
}

// failedForGood reports whether member key, pod p, failed on its own and nothing
// replaces it: phase Failed, not deleted, not evicted, not rejected by the kubelet at
// admission (such a member is placed again), and without a controller owner.
func (g *group) failedForGood(key string, p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp == nil && !g.evicting[key] &&
		!cluster.KubeletRejected(p) && metav1.GetControllerOf(p) == nil
}

// unplaced returns the members that need a node: live, not terminal, unbound, not being
// evicted, sorted by key.
func (g *group) unplaced() []placement.Member {
	var out []placement.Member
	for _, key := range g.memberKeys() {
		if p := g.members[key]; g.needsNode(key, p) {
			out = append(out, placement.Member{Name: key, Pod: p, Requests: g.requests[key]})
		}
	}
	return out
}

// hasUnplaced reports whether unplaced would list a member, without listing them.
func (g *group) hasUnplaced() bool {
	for key, p := range g.members {
		if g.needsNode(key, p) {
			return true
		}
	}
	return false
}

// needsNode reports whether member key, pod p, needs a node: live, not terminal,
// unbound, not being evicted.
func (g *group) needsNode(key string, p *corev1.Pod) bool {
	return !terminal(p) && g.nodeOf(key, p) == "" && !g.evicting[key] && p.DeletionTimestamp == nil
}

// boundLive counts members bound and not terminal, nor being deleted.
func (g *group) boundLive() int {
	n := 0
	for key, p := range g.members {
		if g.boundLiveMember(key, p) {
			n++
		}
	}
	return n
}

// boundLiveMember reports whether member key, pod p, is bound and not terminal, nor
// being deleted.
func (g *group) boundLiveMember(key string, p *corev1.Pod) bool {
	return !terminal(p) && g.nodeOf(key, p) != "" && !g.evicting[key] && p.DeletionTimestamp == nil
}

// policyFor merges overrides over the queue's defaults over the configuration's.
func policyFor(base lifecycle.Policy, layers ...PolicyOverrides) lifecycle.Policy {
	p := base
	for _, o := range layers {
		if o.StartTimeout != nil {
			p.StartTimeout = *o.StartTimeout
		}
		if o.RecoveryTimeout != nil {
			p.RecoveryTimeout = *o.RecoveryTimeout
		}
		if o.MaxRetries != nil {
			p.MaxRetries = *o.MaxRetries
		}
		if o.BackoffBase != nil {
			p.BackoffBase = *o.BackoffBase
		}
		if o.BackoffMax != nil {
			p.BackoffMax = *o.BackoffMax
		}
	}
	return p
}

// attempt returns the group's current attempt, at least 1: the attempt a plan made now
// belongs to.
func (g *group) attempt() int {
	if !g.started {
		return 1
	}
	return max(g.state.Attempt(), 1)
}

// unassume undoes the snapshot's assumption of member key's claims, if it holds one.
func (g *group) unassume(key string) {
	if undo := g.assumed[key]; undo != nil {
		undo()
	}
	delete(g.assumed, key)
}

// resolve returns r with its diagnosis for g (queue.Reason.Resolved), and its text. A
// status is read for every group once a second, and a deep queue's reasons rarely change
// between two reads: both are made again only when r says something else than the reason
// they were made from. The last two are kept: while a starving group's reservation comes
// and goes, a waiting group's reason goes back and forth between Reserved and
// Unschedulable, each time with the words it had (in the October replay, nine times in
// ten).
func (g *group) resolve(r *queue.Reason) (queue.Reason, string) {
	c := &g.resolved
	switch n := g.newest; {
	case c[n].ok && c[n].of.Same(*r):
	case c[1-n].ok && c[1-n].of.Same(*r):
		g.newest = 1 - n
	default:
		res := r.Resolved()
		g.newest = 1 - n // the older is replaced
		c[1-n] = resolvedReason{reason: res, text: res.String(), of: *r, ok: true}
	}
	return c[g.newest].reason, c[g.newest].text
}

// resolvedReason is a reason resolve made: of with its diagnosis for the group
// (reason), and the text it renders, when ok.
type resolvedReason struct {
	reason queue.Reason
	text   string
	of     queue.Reason
	ok     bool
}

// setWaiting records why the group waits, of the given kind (waitingKind).
func (g *group) setWaiting(r *queue.Reason, kind string) {
	g.waitingOf, g.waiting, g.waitingKind = *r, &g.waitingOf, kind
}

// clearWaiting records that the group no longer waits.
func (g *group) clearWaiting() {
	g.waitingOf, g.waiting, g.waitingKind, g.flipAt = queue.Reason{}, nil, "", time.Time{}
}

// waitingString is g.waiting rendered (see resolve).
func (g *group) waitingString() string {
	_, text := g.resolve(g.waiting)
	return text
}

// noteOn records that the forecast's record c of a node lists a member of g.
func (g *group) noteOn(c *nodePods) {
	if !slices.Contains(g.onNodes, c) {
		g.onNodes = append(g.onNodes, c)
	}
}
