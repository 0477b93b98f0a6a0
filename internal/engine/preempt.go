package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// preemption is a preemption in flight: the groups evicted for a waiting group of
// higher priority, whose nodes are reserved for it while they release them.
type preemption struct {
	preemptor string
	victims   []string
	// pods are the victims' members when they were evicted: what holds the nodes the
	// preemptor waits for, in their groups or, for a victim whose owner keeps its state
	// (see HandOff), out of them.
	pods []string
	// claims are the DRA ResourceClaims the victims give back: the preemptor waits for
	// them to be deallocated as it waits for the pods to be gone.
	claims []givenClaim
	// reclaim marks victims evicted to give the preemptor's queue its lent quota back.
	reclaim bool
	// deadline is when the preemption ends even if the victims still hold their nodes
	// (see Config.PreemptionSlack).
	deadline time.Time
}

// DefaultPreemptionSlack is how long past its victims' largest termination grace period
// a preemption waits, unless Config.PreemptionSlack says otherwise, for their pods to be
// gone and their claims deallocated. A victim pod stuck terminating (a finalizer nobody
// removes, a node that died) would otherwise keep the preemptor's nodes reserved, and
// every other group off them, for ever.
const DefaultPreemptionSlack = 2 * time.Minute

// preemptionSlack is the configured slack, or DefaultPreemptionSlack.
func (e *Engine) preemptionSlack() time.Duration {
	if e.cfg.PreemptionSlack > 0 {
		return e.cfg.PreemptionSlack
	}
	return DefaultPreemptionSlack
}

// terminationGrace is the longest termination grace period of pods, the API's default
// (30s) for a pod that sets none.
func terminationGrace(pods []*corev1.Pod) time.Duration {
	var longest time.Duration
	for _, p := range pods {
		s := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if p.Spec.TerminationGracePeriodSeconds != nil {
			s = *p.Spec.TerminationGracePeriodSeconds
		}
		longest = max(longest, time.Duration(s)*time.Second)
	}
	return longest
}

// maxPreemptionTries bounds the waiting groups an admission pass tries to preempt for.
// Each try places the group on a copy of the snapshot once, and once per candidate
// victim when the try succeeds.
const maxPreemptionTries = 3

// preempt runs after an admission pass. It first ends the preemptions that are over:
// the preemptor was admitted or left the queue, or its victims hold nothing any more.
// Then it takes the waiting groups in admission order and, for each that has no
// preemption in flight, evicts the fewest groups that make room for it, sparing those
// of higher priority and older admission first, and reserves their nodes for it:
//   - a group within its own queue's quota whose cohort lent that quota out
//     (queue.Reason.Reclaimable) takes it back from the groups of the cohort's
//     borrowing queues, whatever their priority;
//   - a group that does not fit now but would if admitted groups of lower priority gave
//     up their nodes preempts those.
//
// Several preemptions may be in flight, one per preemptor, each with its own victims: a
// preemptor does not evict more groups while its victims are still releasing their
// nodes, and a second preemptor does not count on the nodes being freed for another
// unless it is of higher priority (the queue keeps them closed to it otherwise), so no
// two preemptors evict groups for the same nodes. A victim whose pods take minutes to
// stop (a checkpoint on SIGTERM) holds up its own preemptor only.
func (e *Engine) preempt(res queue.Result, now time.Time, out *Output) {
	e.endPreemptions(now, out)
	var lowest int32
	byPriority := e.anyBelow(res.Waiting)
	if byPriority {
		lowest, byPriority = e.lowestAdmittedPriority()
	}
	tries := 0
	for _, w := range res.Waiting {
		if tries == maxPreemptionTries {
			return
		}
		g := e.groups[w.Key]
		if g == nil || e.preempting[w.Key] != nil {
			continue
		}
		var candidates []*group
		reclaim := w.Reason.Reclaimable
		switch {
		case reclaim:
			candidates = e.borrowers(e.queueOf(g), w.Reason.Resource)
		case byPriority && g.spec.Priority > lowest && needsRoom(w.Reason) && mayPreempt(g):
			candidates = e.victimCandidates(g.spec.Priority)
		}
		if len(candidates) == 0 {
			continue
		}
		tries++
		closed := e.queue.ClosedByPreemption(g.key, g.spec.Priority)
		release := e.claimRelease(candidates)
		admits := func(trial *cluster.Snapshot, evicted []*group) bool {
			if reclaim && !e.queue.FitsQuotaWithout(g.key, keysOf(evicted)) {
				return false
			}
			if release != nil {
				defer release.show(trial, evicted)()
			}
			return fits(trial, w.Entry.Group, closed)
		}
		victims := chooseVictims(e.snap, candidates, e.scarceFor(w.Entry.Group), e.heldBy(candidates, release), admits)
		if len(victims) == 0 {
			continue
		}
		e.evictFor(g, victims, release.given(victims), reclaim, now, out)
	}
}

// endPreemptions ends the preemptions that are over: the preemptor was admitted or left
// the queue, or its victims hold nothing any more, or they still do at the deadline.
// The last is a Warning event on the preemptor, naming what still holds its nodes.
func (e *Engine) endPreemptions(now time.Time, out *Output) {
	for _, key := range sortedKeys(e.preempting) {
		pr := e.preempting[key]
		pending := e.preemptionPending(pr)
		if pending && now.Before(pr.deadline) {
			continue
		}
		if pending {
			out.Events = append(out.Events, Event{Group: key, Type: Warning, Reason: ReasonPreemptionTimedOut,
				Message: e.stillHeld(pr) + "; the nodes are no longer reserved for this group"})
		}
		e.queue.Unreserve(key)
		delete(e.preempting, key)
		e.touch(out, key)
	}
}

// ReasonPreemptionTimedOut is the reason of the Warning event on a preemptor whose
// victims still held their nodes Config.PreemptionSlack past their termination grace
// period.
const ReasonPreemptionTimedOut = "PreemptionTimedOut"

// stillHeld says what of pr's victims still holds the preemptor's nodes: their pods
// still bound and their ResourceClaims still allocated, a few of each named.
func (e *Engine) stillHeld(pr *preemption) string {
	var pods, claims []string
	for _, p := range pr.pods {
		if e.snap.Bound(p) {
			pods = append(pods, p)
		}
	}
	for _, c := range pr.claims {
		if c.heldOn(e.snap) {
			claims = append(claims, c.key)
		}
	}
	return fmt.Sprintf("the %d group(s) preempted for it (%s) still hold %d pod(s) and %d ResourceClaim(s) past their termination grace period and %s: %s",
		len(pr.victims), strings.Join(pr.victims, ", "), len(pods), len(claims), e.preemptionSlack(), strings.Join(firstFew(append(pods, claims...), 5), ", "))
}

// firstFew returns the first n of names, and how many more there are.
func firstFew(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(slices.Clip(names[:n]), fmt.Sprintf("and %d more", len(names)-n))
}

// nextPreemptionDeadline returns the earliest deadline of the preemptions in flight,
// or zero when there is none.
func (e *Engine) nextPreemptionDeadline() time.Time {
	var next time.Time
	for _, pr := range e.preempting {
		if next.IsZero() || pr.deadline.Before(next) {
			next = pr.deadline
		}
	}
	return next
}

// needsRoom reports whether a group waits for nodes that preemption could free: it does
// not fit now, though it could fit an empty cluster, or it fits only on nodes being freed
// for another preemptor.
func needsRoom(r queue.Reason) bool {
	switch r.Kind {
	case queue.Placement:
		return !r.Impossible()
	case queue.Reserved:
		return r.ForPreemption
	}
	return false
}

// preemptionPending reports whether a preemption is still in flight: its preemptor is
// queued and some pod of its victims still counts on a node of the snapshot (a bind in
// flight when it was evicted counts until the pod is gone), or they still hold a claim
// they give back.
func (e *Engine) preemptionPending(pr *preemption) bool {
	g := e.groups[pr.preemptor]
	if g == nil || !g.queued {
		return false
	}
	return slices.ContainsFunc(pr.pods, e.snap.Bound) || slices.ContainsFunc(pr.claims, func(c givenClaim) bool { return c.heldOn(e.snap) })
}

// mayPreempt reports whether a group may evict others: neither its PriorityClass nor
// any member opts out with preemptionPolicy Never.
func mayPreempt(g *group) bool {
	if g.spec.PreemptNever {
		return false
	}
	for _, p := range g.members {
		if p.Spec.PreemptionPolicy != nil && *p.Spec.PreemptionPolicy == corev1.PreemptNever {
			return false
		}
	}
	return true
}

// anyBelow reports whether some group has a lower priority than some waiting group:
// the cheap test that spares clusters of one priority the search for victims.
func (e *Engine) anyBelow(waiting []queue.Waiting) bool {
	if len(waiting) == 0 {
		return false
	}
	highest := waiting[0].Priority
	for _, w := range waiting[1:] {
		highest = max(highest, w.Priority)
	}
	for _, g := range e.groups {
		if g.spec.Priority < highest {
			return true
		}
	}
	return false
}

// lowestAdmittedPriority returns the lowest priority of the groups victimCandidates
// would consider, and false if there is none: a waiting group of that priority or lower
// has no one to preempt.
func (e *Engine) lowestAdmittedPriority() (int32, bool) {
	var lowest int32
	found := false
	for _, g := range e.groups {
		if preemptible(g) && (!found || g.spec.Priority < lowest) {
			lowest, found = g.spec.Priority, true
		}
	}
	return lowest, found
}

// preemptible reports whether a group could be preempted: it is admitted, holds nodes
// and is not being evicted.
func preemptible(g *group) bool {
	if !g.started || len(g.evicting) > 0 {
		return false
	}
	switch g.state.Phase() {
	case lifecycle.Binding, lifecycle.Starting, lifecycle.Running, lifecycle.Recovering:
		return g.holdsNodes()
	}
	return false
}

// victimCandidates returns the admitted groups of priority below prio that hold nodes
// and are not being evicted, most valuable first (see byValue).
func (e *Engine) victimCandidates(prio int32) []*group {
	var out []*group
	for _, g := range e.groups {
		if g.spec.Priority < prio && preemptible(g) {
			out = append(out, g)
		}
	}
	return byValue(out)
}

// borrowers returns the admitted groups that hold nodes, are not being evicted, and
// belong to another queue of queue q's cohort that holds more of res than its quota:
// what a group of q short of res may reclaim. A queue that borrows only other resources
// keeps its groups. They come most valuable first: those of the queues that borrow the
// least first, so that the queue borrowing the most gives back first, then by byValue.
func (e *Engine) borrowers(q string, res corev1.ResourceName) []*group {
	cohort := e.queue.Cohort(q)
	if cohort == "" {
		return nil
	}
	borrowed := map[string]int64{}
	var out []*group
	for _, g := range e.groups {
		gq := e.queueOf(g)
		if gq == q || e.queue.Cohort(gq) != cohort || !preemptible(g) {
			continue
		}
		if _, ok := borrowed[gq]; !ok {
			borrowed[gq] = e.queue.Borrowed(gq, res)
		}
		if borrowed[gq] > 0 {
			out = append(out, g)
		}
	}
	byValue(out)
	slices.SortStableFunc(out, func(a, b *group) int { return cmp.Compare(borrowed[e.queueOf(a)], borrowed[e.queueOf(b)]) })
	return out
}

// byValue sorts groups most valuable first: higher priority, then admitted earlier, then
// key. Victims are taken from the end.
func byValue(out []*group) []*group {
	slices.SortFunc(out, func(a, b *group) int {
		if c := cmp.Compare(b.spec.Priority, a.spec.Priority); c != 0 {
			return c
		}
		if c := a.state.AdmittedAt().Compare(b.state.AdmittedAt()); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

func keysOf(groups []*group) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.key
	}
	return out
}

// fits reports whether g can be placed on snap now outside the closed nodes, leaving
// snap as it was.
func fits(snap *cluster.Snapshot, g placement.Group, closed map[string]bool) bool {
	opts := placement.Options{}
	if len(closed) > 0 {
		opts.Exclude = func(node string) bool { return closed[node] }
	}
	plan := placement.Try(snap, g, opts)
	if plan == nil {
		return false
	}
	plan.Revert()
	return true
}

// evictFor preempts victims for g: each victim's attempt ends as Preempted and its
// members are evicted, and their nodes are reserved for g until they are free and the
// DRA claims they give back (claims) deallocated. reclaim
// says g takes back its queue's quota from borrowing victims rather than preempting
// groups of lower priority.
func (e *Engine) evictFor(g *group, victims []*group, claims []givenClaim, reclaim bool, now time.Time, out *Output) {
	pr := &preemption{preemptor: g.key, claims: claims, reclaim: reclaim}
	names := make([]string, len(victims))
	var nodes []string
	msg := fmt.Sprintf("preempted by %s (priority %d)", g.key, g.spec.Priority)
	how := lifecycle.ByPriority
	reason, what := "Preempting", "evicting %d group(s) of lower priority to make room: %s"
	if reclaim {
		how = lifecycle.ByReclaim
		q := e.queueOf(g)
		msg = fmt.Sprintf("reclaimed by queue %s of cohort %s for %s", q, e.queue.Cohort(q), g.key)
		reason = "Reclaiming"
		what = fmt.Sprintf("evicting %%d group(s) that borrow from cohort %s to give queue %s its quota back: %%s", e.queue.Cohort(q), q)
	}
	var victimPods []*corev1.Pod
	for i, v := range victims {
		names[i] = fmt.Sprintf("%s (priority %d)", v.key, v.spec.Priority)
		pr.victims = append(pr.victims, v.key)
		pr.pods = append(pr.pods, v.memberKeys()...)
		for _, key := range v.memberKeys() {
			victimPods = append(victimPods, v.members[key])
		}
		nodes = append(nodes, v.nodes()...) // before the eviction clears pending binds
		e.step(v, lifecycle.Preempt{Message: msg, How: how, For: g.key}, now, out)
		e.arm(v)
	}
	pr.deadline = now.Add(terminationGrace(victimPods) + e.preemptionSlack())
	e.preempting[g.key] = pr
	e.queue.ReserveForPreemption(g.key, g.spec.Priority, nodes, reclaim, now)
	out.decision(strings.ToLower(reason))
	e.touchGroup(out, g)
	out.Events = append(out.Events, Event{Group: g.key, Type: Normal, Reason: reason,
		Message: fmt.Sprintf(what, len(victims), strings.Join(names, ", "))})
}

// preemptingFor returns the victims of the preemption in flight for key, if any, and
// whether they were evicted to reclaim quota.
func (e *Engine) preemptingFor(key string) ([]string, bool) {
	if pr := e.preempting[key]; pr != nil {
		return slices.Clone(pr.victims), pr.reclaim
	}
	return nil, false
}

// holdsNodes reports whether a live member is bound or being bound.
func (g *group) holdsNodes() bool {
	for key, p := range g.members {
		if g.nodeOf(key, p) != "" && !terminal(p) {
			return true
		}
	}
	return false
}

// nodes returns the nodes the group's live members are bound or being bound to, sorted
// and without repeats.
func (g *group) nodes() []string {
	var out []string
	for key, p := range g.members {
		if n := g.nodeOf(key, p); n != "" && !terminal(p) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// removeFrom takes the group's bound members off snap.
func (g *group) removeFrom(snap *cluster.Snapshot) {
	for key := range g.members {
		snap.RemovePod(key)
	}
}

// addTo puts the group's bound, live members back on snap, where they are.
func (g *group) addTo(snap *cluster.Snapshot) {
	for key, p := range g.members {
		if n := g.nodeOf(key, p); n != "" && !terminal(p) {
			snap.Bind(p, n)
		}
	}
}
