package engine

import (
	"time"

	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// admit runs one admission pass over every queued group. Unless preemption could act
// on its result, the pass reports only the waiting groups whose reason changed
// (queue.Manager.ScheduleChanges): the others keep the status they have.
func (e *Engine) admit(now time.Time, out *Output) {
	e.schedule = false
	full := e.fullPassNeeded()
	var res queue.Result
	if full {
		res = e.queue.Schedule(e.snap, now)
	} else {
		res = e.queue.ScheduleChanges(e.snap, e.snapVersion, now)
	}
	for _, a := range res.Admitted {
		g := e.groups[a.Entry.Key]
		if g == nil {
			a.Plan.Revert()
			continue
		}
		g.placed = map[string]bool{} // a new attempt
		plan := e.bindPlan(g, a.Plan, out)
		out.Admitted = append(out.Admitted, Admission{Group: g.key, Queue: a.Entry.Queue, Waited: now.Sub(g.queuedAt)})
		out.decision("admitted")
		g.queued = false
		g.clearWaiting()
		e.step(g, lifecycle.Admitted{Planned: len(a.Plan.Assignments)}, now, out)
		out.Plans[plan].Attempt = g.attempt()
		e.arm(g)
		e.dirty[g.key] = true // observe the binds on the next Step
	}
	e.noteWaiting(res, now, out)
	// The groups found Impossible have left the queue: the next to cross the threshold
	// is among the others.
	e.nextStarve = time.Time{}
	if e.cfg.StarvationThreshold > 0 {
		e.nextStarve = e.queue.NextStarve(now)
	}
	switch {
	case full && !e.cfg.DisablePreemption:
		e.preempt(res, now, out)
	case !full:
		e.endPreemptions(now, out)
	}
	e.noteReservation(out)
}

// noteWaiting records why the groups res lists as waiting wait, with an event and a
// lifecycle step for those whose kind of reason changed, and counts the decisions,
// those of the groups left unlisted as unchanged included.
func (e *Engine) noteWaiting(res queue.Result, now time.Time, out *Output) {
	for _, u := range res.Unchanged {
		out.decisions(decisionOf(u.Reason), u.Count)
		e.skipped += u.Count
	}
	// The list comes in runs of one decision: each run is counted once.
	var run decisionRun
	defer run.flush(out)
	for i := range res.Waiting {
		w := &res.Waiting[i]
		g := e.groups[w.Key]
		if g == nil {
			continue
		}
		kind := waitingKind(w.Reason)
		run.add(decisionOf(w.Reason), out)
		if e.holdFlip(g, kind, now) {
			continue
		}
		changed := kind != g.waitingKind
		g.setWaiting(&w.Reason, kind)
		// Texts are rendered only when they are reported: a long queue re-decides every
		// waiting group on each pass, and most passes change nothing for most of them.
		switch {
		case w.Reason.Impossible():
			e.step(g, lifecycle.Rejected{Impossible: true, Reason: g.waitingString()}, now, out)
		case changed:
			e.reportWaiting(g, w.Reason, kind, now, out)
		}
		e.arm(g)
	}
}

// decisionRun counts a run of equal decisions before they go to Output.Decisions.
type decisionRun struct {
	decision string
	n        int
}

// add counts one decision, flushing the run before it if it differs.
func (r *decisionRun) add(decision string, out *Output) {
	if decision != r.decision {
		r.flush(out)
		r.decision = decision
	}
	r.n++
}

// flush adds the run to out and starts a new one.
func (r *decisionRun) flush(out *Output) {
	if r.n > 0 {
		out.decisions(r.decision, r.n)
	}
	r.n = 0
}

// fullPassNeeded reports whether the admission pass must list every waiting group: for
// preemption, which looks for a preemptor among them, when some queue is in a cohort
// (a group may reclaim lent quota) or a queued group has a higher priority than some
// group (it may preempt).
func (e *Engine) fullPassNeeded() bool {
	if e.fullPasses {
		return true
	}
	if e.cfg.DisablePreemption {
		return false
	}
	for _, q := range e.queues {
		if q.Cohort != "" {
			return true
		}
	}
	highest, ok := e.queue.HighestPriority()
	if !ok {
		return false
	}
	for prio := range e.priorities {
		if prio < highest {
			return true
		}
	}
	return false
}

// countPriority adds d groups of priority prio to Engine.priorities.
func (e *Engine) countPriority(prio int32, d int) {
	if e.priorities[prio] += d; e.priorities[prio] <= 0 {
		delete(e.priorities, prio)
	}
}

// bindPlan turns an assumed plan into a Plan of out for the group's current attempt, and
// returns its index: the snapshot counts each member on its node from now on, as it will
// once the bind is observed.
func (e *Engine) bindPlan(g *group, plan *placement.Plan, out *Output) int {
	plan.Revert()
	out.Plans = append(out.Plans, Plan{Group: g.key, Attempt: g.attempt()})
	steps := &out.Plans[len(out.Plans)-1].Steps
	e.touchGroup(out, g)
	if plan.Domain != "" {
		g.domain = plan.Domain
	}
	for _, a := range plan.Assignments {
		p := g.members[a.Member]
		if p == nil {
			continue
		}
		e.snap.BindRequests(a.Member, p, a.Node, g.requests[a.Member]) // what SetPod counted it for
		e.snapVersion++
		g.pending[a.Member] = a.Node
		if len(a.Claims) > 0 {
			a.Claims = g.spec.consumers(p, a.Claims)
			// Placed on this snapshot a moment ago: the claims are as placement saw them.
			if undo, err := kubefit.Assume(e.snap, p, a.Claims); err == nil {
				g.assumed[a.Member] = undo
			}
		}
		if g.placed == nil {
			g.placed = map[string]bool{}
		}
		g.placed[a.Member] = true
		*steps = append(*steps, Step{Kind: StepBind, Pod: a.Member, Node: a.Node, Provision: a.Provision, BindVolumes: a.BindVolumes, Claims: a.Claims})
	}
	return len(out.Plans) - 1
}

// placeReplacements places unbound members of groups that already hold their placement
// (Binding, Starting, Running, Recovering): binds that failed, replacements for lost members, and members beyond
// minMember that did not fit at admission. Each is placed alone, in the group's domain.
func (e *Engine) placeReplacements(out *Output) {
	if len(e.replace) == 0 {
		return // most Steps: sorting no keys still cost a slice
	}
	for _, key := range sortedKeys(e.replace) {
		g := e.groups[key]
		if g == nil || !g.started {
			delete(e.replace, key)
			continue
		}
		switch g.state.Phase() {
		case lifecycle.Binding, lifecycle.Starting, lifecycle.Running, lifecycle.Recovering:
		default:
			delete(e.replace, key)
			continue
		}
		members := g.unplaced()
		if len(members) == 0 {
			delete(e.replace, key)
			continue
		}
		topo := g.spec.Topology
		topo.Domain = g.domain
		// A member that does not fit is tried again on the next pass: no diagnosis.
		plan := placement.Try(e.snap, placement.Group{Name: g.key, MinMember: 1, Members: members, Topology: topo}, placement.Options{})
		if plan != nil {
			e.bindPlan(g, plan, out)
			e.dirty[g.key] = true
		}
	}
}

// wakeAt is the earliest time a group's timer or a starvation reservation is due.
func (e *Engine) wakeAt() time.Time {
	w := e.nextTimer()
	for _, t := range []time.Time{e.nextStarve, e.forecastWake(), e.nextFlip(), e.nextPreemptionDeadline(), e.nextClaimRelease()} {
		if !t.IsZero() && (w.IsZero() || t.Before(w)) {
			w = t
		}
	}
	return w
}

// BindFailed reports that a bind the engine asked for failed. It frees the node's capacity again; the member is placed anew.
func (e *Engine) BindFailed(podKey string) {
	gk, ok := e.podGroup[podKey]
	if !ok {
		return
	}
	g := e.groups[gk]
	if g == nil {
		return
	}
	if _, ok := g.pending[podKey]; ok {
		delete(g.pending, podKey)
		g.unassume(podKey)
		if p := g.members[podKey]; p != nil {
			e.snap.AddPod(p) // re-records the pod as it is: unbound, so it counts nowhere
		}
		e.snapVersion++
		e.dirty[gk] = true
		e.schedule = true
	}
}

// waitingKind names why a group waits, for events and status: the queue's reason kind,
// with placement failures split into Unschedulable and Impossible.
func waitingKind(r queue.Reason) string {
	if r.Kind == queue.Placement && r.Diagnosis != nil {
		return string(r.Diagnosis.Code)
	}
	return string(r.Kind)
}

// decisionOf names a waiting group's decision for the decisions metric.
func decisionOf(r queue.Reason) string {
	switch {
	case r.Impossible():
		return "impossible"
	case r.Kind == queue.QuotaExceeded:
		return "quota"
	case r.Kind == queue.QueueNotFound:
		return "queue-not-found"
	case r.Kind == queue.QueueNotAllowed, r.Kind == queue.QueueAmbiguous:
		return "queue-not-allowed"
	case r.Kind == queue.Reserved:
		return "reserved"
	}
	return "unschedulable"
}

// eventType is Warning for a group that waits on a mistake in what it names (a queue that
// does not exist or does not admit its namespace, or none named among several), which no
// amount of waiting mends; Normal for a group that waits its turn.
func eventType(r queue.Reason) EventType {
	switch r.Kind {
	case queue.QueueNotFound, queue.QueueNotAllowed, queue.QueueAmbiguous:
		return Warning
	}
	return Normal
}
