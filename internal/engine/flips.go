package engine

import (
	"time"

	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// flipQuiet is how soon after a waiting group's kind of reason was last reported a move
// between Reserved and Unschedulable is reported again.
//
// A waiting group goes from one to the other whenever a starving group's reservation
// comes or goes, and whenever capacity frees or fills on the reserved nodes. Over the
// October replay (muster sim, 128 × 8 GPUs, load 2), 685,000 of the 712,000 changes of
// a waiting group's kind were such flips, and 573,000 of them came within a minute of the
// group's previous one. Each is an Event, a status write and a PodScheduled patch of
// every pending member; a condition that flaps every few seconds tells a user nothing
// and an autoscaler, which reads the pods' reason, less. A flip is therefore held back
// until a minute has passed since the group's kind was last reported, and reported then
// if it still holds.
const flipQuiet = time.Minute

// flips reports whether a move from kind a to kind b is one flipQuiet holds back.
func flips(a, b string) bool {
	return a != b && quietKind(a) && quietKind(b)
}

func quietKind(k string) bool {
	return k == string(queue.Reserved) || k == string(placement.Unschedulable)
}

// holdFlip reports whether g's move to kind, which a pass found, is held back: it is a
// flip within flipQuiet of the kind g reports. The group keeps reporting the reason it
// reported, kind and text (group.reported, see Engine.waitingNow), and is looked at
// again when the quiet ends.
func (e *Engine) holdFlip(g *group, kind string, now time.Time) bool {
	due := g.kindAt.Add(flipQuiet)
	if !flips(g.waitingKind, kind) || !now.Before(due) {
		return false
	}
	if !g.flipAt.Equal(due) {
		g.flipAt = due
		e.flips.Push(timer{at: due, key: g.key})
	}
	return true
}

// reportFlips reports the flips held back whose quiet ended by now and which still
// hold: the kind of the reason the queue has for the group now is the other of the two.
func (e *Engine) reportFlips(now time.Time, out *Output) {
	for len(e.flips) > 0 && !e.flips[0].at.After(now) {
		t := e.flips.Pop()
		g := e.groups[t.key]
		if g == nil || !g.flipAt.Equal(t.at) {
			continue
		}
		g.flipAt = time.Time{}
		r, ok := e.queue.Reason(g.key)
		if !ok || !g.queued {
			continue
		}
		if kind := waitingKind(r); flips(g.waitingKind, kind) {
			g.setWaiting(&r, kind)
			e.reportWaiting(g, r, kind, now, out)
		}
	}
}

// reportWaiting reports the kind of reason g waits for now, which changed: an event and
// a lifecycle step with its text.
func (e *Engine) reportWaiting(g *group, r queue.Reason, kind string, now time.Time, out *Output) {
	g.kindAt, g.flipAt, g.reported = now, time.Time{}, r
	text := g.waitingString()
	out.Events = append(out.Events, Event{Group: g.key, Type: eventType(r), Reason: kind, Message: text})
	e.step(g, lifecycle.Rejected{Reason: text}, now, out)
}

// heldFlip returns the reason g reported, if the queue's reason for it now, r, is a flip
// held back, else nil: what g's status says meanwhile, so that its kind and text agree.
// Passes that list every group and passes that list the changes report the same: the
// reason of the last report, not of the last pass that listed the group.
func heldFlip(g *group, r queue.Reason) *queue.Reason {
	if flips(g.waitingKind, waitingKind(r)) {
		return &g.reported
	}
	return nil
}

// nextFlip returns when the earliest flip held back is due, dropping stale entries.
func (e *Engine) nextFlip() time.Time {
	for len(e.flips) > 0 {
		t := e.flips[0]
		if g := e.groups[t.key]; g != nil && g.flipAt.Equal(t.at) {
			return t.at
		}
		e.flips.Pop()
	}
	return time.Time{}
}
