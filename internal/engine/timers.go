package engine

import (
	"time"

	"github.com/muster-sched/muster/internal/minheap"
)

// timers is a min-heap of group wake-ups. Entries are not removed when a group's wake-up
// changes; a popped entry that no longer matches its group's WakeAt is skipped.
type timers = minheap.Heap[timer]

type timer struct {
	at  time.Time
	key string
}

// Before orders timers by time (minheap.Ordered).
func (t timer) Before(o timer) bool { return t.at.Before(o.at) }

// arm records a group's wake-up, if it has one.
func (e *Engine) arm(g *group) {
	if !g.started {
		return
	}
	if w := g.wakeAt(); !w.IsZero() && !w.Equal(g.armed) {
		g.armed = w
		e.timers.Push(timer{at: w, key: g.key})
	}
}

// due marks dirty every group whose wake-up is at or before now.
func (e *Engine) due(now time.Time) {
	for len(e.timers) > 0 && !e.timers[0].at.After(now) {
		t := e.timers.Pop()
		g := e.groups[t.key]
		if g == nil || !g.started || !g.armed.Equal(t.at) {
			continue
		}
		g.armed = time.Time{}
		e.dirty[t.key] = true
	}
}

// nextTimer returns the earliest live wake-up, dropping stale entries.
func (e *Engine) nextTimer() time.Time {
	for len(e.timers) > 0 {
		t := e.timers[0]
		if g := e.groups[t.key]; g != nil && g.started && g.armed.Equal(t.at) {
			return t.at
		}
		e.timers.Pop()
	}
	return time.Time{}
}
