package engine

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"slices"
	"strings"
	"time"

	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// Step advances every group that changed or whose timer is due, runs an admission pass
// when one may admit something, places replacement members of running groups, and
// returns what the caller must do.
func (e *Engine) Step(now time.Time) Output {
	clear(e.lastEvents) // what they point to is not kept alive
	clear(e.lastChanged)
	out := Output{Events: e.lastEvents[:0], Changed: e.lastChanged[:0]}
	e.now = now
	e.steps++
	if len(e.dirty) > 0 || e.nodesChanged || e.schedule {
		e.forecast.stale, e.forecast.headStale = true, true
	}
	if e.nodesChanged {
		for key, g := range e.groups {
			if g.started && g.state.Phase() == lifecycle.Impossible {
				e.dirty[key] = true
			}
		}
	}
	e.due(now)
	e.releasedClaims()
	if d := e.nextPreemptionDeadline(); !d.IsZero() && !d.After(now) {
		e.schedule = true // the pass ends the preemption (endPreemptions)
	}
	e.dirtyKeys = sortedKeysInto(e.dirtyKeys, e.dirty)
	for _, key := range e.dirtyKeys {
		g := e.groups[key]
		if g == nil {
			e.touch(&out, key)
			continue
		}
		e.touchGroup(&out, g)
		e.forecast.noteChanged(g) // its members or spec may have changed
		e.advance(g, now, &out)
	}
	clear(e.dirty)
	e.nodesChanged = false
	// The forecast comes before the pass, whose reservation goes where it planned the
	// starving group (PlannedNodes); what the pass decides is in the next forecast.
	e.refreshForecast(now, &out)
	// Before the pass: passes that list every waiting group and passes that list those
	// whose reason changed must report the same.
	e.reportFlips(now, &out)
	if e.schedule || (!e.nextStarve.IsZero() && !e.nextStarve.After(now)) {
		e.admit(now, &out)
		e.forecast.stale, e.forecast.headStale = true, true
	}
	e.placeReplacements(&out)
	e.retryClaimReleases(now, &out)
	out.WakeAt = e.wakeAt()
	out.Dropped, e.dropped = e.dropped, nil
	e.lastEvents, e.lastChanged = out.Events, out.Changed
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// sortedKeysInto returns m's keys, sorted, in buf's array: a Step lists the groups that
// changed in the array of the last Step's list rather than in a new one.
func sortedKeysInto[V any](buf []string, m map[string]V) []string {
	buf = buf[:0]
	for key := range m {
		buf = append(buf, key)
	}
	slices.Sort(buf)
	return buf
}

// reportHeld adds to out what g held before Ready since it was last reported.
func (e *Engine) reportHeld(g *group, out *Output) {
	for name, v := range g.state.HeldBeforeReady() {
		if d := v - g.heldReported[name]; d > 0 {
			out.held(name, d)
			if g.heldReported == nil {
				g.heldReported = map[corev1.ResourceName]float64{}
			}
			g.heldReported[name] = v
		}
	}
}

// advance feeds one group's news to its state machine.
func (e *Engine) advance(g *group, now time.Time, out *Output) {
	if g.objectGone {
		if g.goneSince.IsZero() {
			g.goneSince = now
		}
		if !g.retained(now) {
			g.removed = true
		}
	}
	if g.definedByPods() {
		switch {
		case len(g.members) > 0:
			g.emptySince = time.Time{}
		case g.emptySince.IsZero():
			g.emptySince = now
		}
		if len(g.members) == 0 && !g.retained(now) {
			g.removed = true
		}
	}
	if !g.started && !e.start(g, now, out) {
		e.forget(g)
		return
	}
	if !g.started {
		return
	}
	if g.removed && !g.state.Phase().Terminal() && !g.handedOff {
		e.step(g, lifecycle.Cancel{}, now, out)
		if g.respecified {
			// An object of the same name came before the cancel: its group is a new one,
			// with the pods that came since (see renew).
			e.renew(g)
			e.advance(g, now, out)
			return
		}
	}
	if g.spec.OwnerFailed != "" && !g.state.Phase().Terminal() {
		e.step(g, lifecycle.OwnerFailed{Message: g.spec.OwnerFailed}, now, out)
	}
	switch phase := g.state.Phase(); {
	case g.spec.Stopped && phase != lifecycle.Stopped && !phase.Terminal():
		e.step(g, lifecycle.Stop{Message: "stopped: the group carries muster.dev/stopped: \"true\"; every member it held is evicted and it stays out of the queue"}, now, out)
	case !g.spec.Stopped && phase == lifecycle.Stopped:
		e.step(g, lifecycle.Unstop{}, now, out)
	}
	obs, held := g.observe()
	held.Add(e.devicesHeld(g))
	e.step(g, obs, now, out)
	if g.state.Phase() == lifecycle.Impossible && e.nodesChanged {
		e.step(g, lifecycle.NodesChanged{}, now, out)
	}
	if w := g.state.WakeAt(); !w.IsZero() && !w.After(now) {
		e.step(g, lifecycle.Tick{}, now, out)
	}
	// Queued, by its members' change or at the end of a backoff, with enough members
	// bound already (a restarted muster finds the attempt the one before it admitted,
	// even when its record did not say so yet): they are its attempt.
	if g.state.Phase() == lifecycle.Queued && g.boundLive() >= g.spec.MinMember {
		e.adopt(g, obs, now, out)
	}
	if held.IsZero() {
		e.queue.Release(g.key)
	} else {
		e.queue.Charge(g.key, e.queueOf(g), held)
	}
	if g.queued {
		e.push(g)
	}
	if g.hasUnplaced() {
		switch g.state.Phase() {
		case lifecycle.Binding, lifecycle.Starting, lifecycle.Running, lifecycle.Recovering:
			e.replace[g.key] = true
		}
	}
	e.arm(g)
	e.forget(g)
}

// start creates the group's state once its spec is known and valid. It reports false when
// the group should be dropped (removed before it ever started).
func (e *Engine) start(g *group, now time.Time, out *Output) bool {
	if g.removed {
		return false
	}
	if !g.hasSpec {
		return true // members name a group object not seen yet; wait for it
	}
	if problems := strings.Join(g.spec.Invalid, "; "); problems != "" {
		if problems != g.invalid {
			g.invalid = problems
			out.Events = append(out.Events, Event{Group: g.key, Type: Warning, Reason: "InvalidGroup", Message: problems})
		}
		return true
	}
	st, err := lifecycle.New(g.spec.MinMember, now)
	if err == nil && g.spec.Past != nil {
		resumed, rerr := lifecycle.Resume(g.spec.MinMember, now, *g.spec.Past)
		if rerr == nil {
			st = resumed
		} else {
			out.Events = append(out.Events, Event{Group: g.key, Type: Warning, Reason: "RecordIgnored",
				Message: fmt.Sprintf("the group's lifecycle record was not resumed, the group starts anew: %v", rerr)})
		}
	}
	if err != nil {
		g.invalid = fmt.Sprintf("spec.minMember: %d: %v", g.spec.MinMember, err)
		out.Events = append(out.Events, Event{Group: g.key, Type: Warning, Reason: "InvalidGroup", Message: g.invalid})
		return true
	}
	q := e.queues[e.queueOf(g)]
	g.policy = policyFor(e.cfg.Policy, q.Defaults, g.spec.Policy)
	g.policy.JitterSeed = seedOf(g.key)
	if err := g.policy.Validate(); err != nil {
		g.invalid = err.Error()
		out.Events = append(out.Events, Event{Group: g.key, Type: Warning, Reason: "InvalidGroup", Message: g.invalid})
		return true
	}
	g.state, g.started, g.invalid = st, true, ""
	return true
}

// forget drops a cancelled group once nothing of it is left.
func (e *Engine) forget(g *group) {
	if g.removed && len(g.members) == 0 && (!g.started || g.state.Phase().Terminal() || g.handedOff) {
		e.drop(g)
	}
}

// unqueue takes g out of the admission queue, keeping the reason it waited for there
// last, or the one it reported while a flip was held back (see flipQuiet): its status
// says it until the group is queued again.
func (e *Engine) unqueue(g *group) {
	if r, ok := e.queue.Reason(g.key); ok && g.waiting != nil {
		if held := heldFlip(g, r); held != nil {
			r = *held
		}
		g.setWaiting(&r, g.waitingKind)
	}
	e.queue.Remove(g.key)
}

// drop removes a group from the engine and its queue.
func (e *Engine) drop(g *group) {
	e.release(g)
	delete(e.groups, g.key)
	e.countPriority(g.spec.Priority, -1)
	e.dropped = append(e.dropped, g.key)
}

// release takes g out of the admission queue, its charge off its queue, and undoes
// what the snapshot assumed of its claims.
func (e *Engine) release(g *group) {
	for key := range g.assumed {
		g.unassume(key)
		e.snapVersion++
	}
	e.unqueue(g)
	e.queue.Release(g.key)
}

func seedOf(key string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h
}

// queueOf names the queue a group is charged to: the one it names, else the configured
// default, or none ("") while several queues admit its namespace and it names none.
func (e *Engine) queueOf(g *group) string {
	switch {
	case g.spec.Queue != "":
		return g.spec.Queue
	case len(g.spec.QueueCandidates) > 1:
		return ""
	}
	return e.cfg.DefaultQueue
}

// step applies one event and carries out the actions that concern the engine.
func (e *Engine) step(g *group, ev lifecycle.Event, now time.Time, out *Output) {
	var actions []lifecycle.Action
	e.touchGroup(out, g)
	e.forecast.noteChanged(g)
	g.state, actions = lifecycle.Step(g.state, g.policy, ev, now)
	if n := g.state.HeldBeforeReadyChanges(); n != g.heldSeen {
		g.heldSeen = n
		e.reportHeld(g, out)
	}
	for _, a := range actions {
		switch a := a.(type) {
		case lifecycle.Enqueue:
			g.queued, g.requeued = true, a.Requeued
			if !a.InPlace || g.queuedAt.IsZero() {
				g.queuedAt = now // a preempted group keeps the place it had
			}
			e.push(g)
		case lifecycle.Dequeue:
			g.queued = false
			e.unqueue(g)
		case lifecycle.EvictAll:
			e.evictAll(g, a, out)
		case lifecycle.Transition:
			out.Events = append(out.Events, transitionEvent(g.key, a))
			if a.To == lifecycle.Binding {
				g.awaitsPods, g.handedOff, g.evictedOwner = false, false, ""
			}
			if a.To == lifecycle.Running && a.From != lifecycle.Recovering {
				g.runningSince = now
				g.runFor = runtimeOnly(e.runtimeOf(g))
			}
			if a.To == lifecycle.Finished && !g.runningSince.IsZero() {
				e.history.record(historyKey(g, e.queueOf(g)), now.Sub(g.runningSince))
			}
			if a.To == lifecycle.Running && a.From != lifecycle.Recovering {
				if d, ok := g.state.TimeToReady(); ok {
					out.Ready = append(out.Ready, Readiness{Group: g.key, After: d})
				}
			}
		case lifecycle.Released:
			out.Released = append(out.Released, Release{Group: g.key, After: a.After})
		}
	}
}

func transitionEvent(key string, t lifecycle.Transition) Event {
	typ := Normal
	switch t.To {
	case lifecycle.Impossible, lifecycle.Failed, lifecycle.Backoff, lifecycle.Recovering:
		typ = Warning
	}
	return Event{Group: key, Type: typ, Reason: t.Reason, Message: t.Message}
}

func (e *Engine) evictAll(g *group, a lifecycle.EvictAll, out *Output) {
	if g.evicting == nil {
		g.evicting = map[string]bool{}
	}
	g.awaitsPods, g.handedOff = g.definedByPods() && a.Reason != lifecycle.ReasonCancelled, false
	cancelled := a.Reason == lifecycle.ReasonCancelled
	if owner := g.spec.ObjectOwner; owner != "" && a.Reason != lifecycle.ReasonCancelled && !g.definedByPods() &&
		g.hasPod(owner) {
		g.evictedOwner = owner
	}
	g.placed = nil // the attempt is over
	for _, key := range g.memberKeys() {
		if g.evicting[key] || cancelled && g.respecified && !g.removedMembers[key] {
			continue // a pod that came after its object was deleted is the next object's
		}
		g.evicting[key] = true
		out.Evictions = append(out.Evictions, Eviction{Group: g.key, Pod: key, Reason: a.Reason, Message: a.Message})
	}
	clear(g.pending)
	g.domain = ""
	if rels := g.spec.claimReleases(g.key); len(rels) > 0 {
		out.ClaimReleases = append(out.ClaimReleases, rels...)
		g.releases, g.releaseSent, g.releaseTries, g.releaseFailed = rels, e.now, 1, false
		e.releasing[g.key] = g
	}
}

// push offers the group's unplaced members to the admission queue. A group that has
// fewer of them than it needs (its members are being evicted, and their replacements
// are not there yet: a preempted group is queued again at once) is not offered until
// they are: it keeps its queue time meanwhile.
func (e *Engine) push(g *group) {
	if g.objectGone {
		e.unqueue(g) // its object comes back first (RemoveGroup)
		return
	}
	if len(e.releaseInFlight(g)) > 0 {
		e.unqueue(g) // queued again once its claims are seen released (releasedClaims)
		return
	}
	members := g.unplaced()
	need := g.spec.MinMember - g.boundLive()
	needs, short := g.taskNeeds(members)
	if len(members) < need || short != "" {
		e.unqueue(g)
		return
	}
	core := 0
	for _, n := range needs {
		core += n
	}
	need = max(need, core) // the first need members hold every task's (see taskNeeds)
	changed := e.queue.Push(queue.Entry{
		Key:       g.key,
		Queue:     e.queueOf(g),
		Priority:  g.spec.Priority,
		QueuedAt:  g.queuedAt,
		Requeued:  g.requeued,
		MinCharge: g.spec.MinResources,
		Runtime:   runtimeOnly(e.runtimeOf(g)),
		Handicap:  e.handicap(g, members),
		Namespace: g.spec.Namespace,
		// Only the queues' verdict matters while the group names none of them.
		Candidates: candidates(g.spec),
		Devices:    e.deviceCharges(members),
		Group: placement.Group{
			Name:         g.key,
			MinMember:    max(need, 1),
			Members:      members,
			Topology:     g.spec.Topology,
			TaskMinimums: needs,
		},
	})
	// An entry the queue had already does not call for a pass: what a pass decides
	// depends on it as before.
	if changed {
		e.schedule = true
	}
}

func runtimeOnly(d time.Duration, _ string) time.Duration { return d }

// adopt takes over a group whose members are already bound, at least minMember of them:
// what a restarted muster, or a new leader, finds. The group is admitted with the
// placement it has, without passing through the queue, and observed again so that it
// moves on to Starting or Running at once.
func (e *Engine) adopt(g *group, obs lifecycle.Observe, now time.Time, out *Output) {
	g.queued = false
	e.unqueue(g)
	g.placed = map[string]bool{}
	for key, p := range g.members {
		if g.nodeOf(key, p) != "" {
			g.placed[key] = true
		}
	}
	obs, _ = g.observe() // with the members placed in the attempt it takes over
	e.step(g, lifecycle.Admitted{Planned: g.boundLive()}, now, out)
	e.step(g, obs, now, out)
}

// candidates returns the queues a group that names none could fall into, or nil when it
// names one.
func candidates(spec GroupSpec) []string {
	if spec.Queue != "" {
		return nil
	}
	return spec.QueueCandidates
}
