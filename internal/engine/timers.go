package engine

import (
	"container/heap"
	"time"
)

// timers is a min-heap of group wake-ups. Entries are not removed when a group's wake-up
// changes; a popped entry that no longer matches its group's WakeAt is skipped.
type timers []timer

type timer struct {
	at  time.Time
	key string
}

func (t timers) Len() int           { return len(t) }
func (t timers) Less(i, j int) bool { return t[i].at.Before(t[j].at) }
func (t timers) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *timers) Push(x any)        { *t = append(*t, x.(timer)) }
func (t *timers) Pop() any {
	old := *t
	x := old[len(old)-1]
	*t = old[:len(old)-1]
	return x
}

// arm records a group's wake-up, if it has one.
func (e *Engine) arm(g *group) {
	if !g.started {
		return
	}
	if w := g.wakeAt(); !w.IsZero() && !w.Equal(g.armed) {
		g.armed = w
		heap.Push(&e.timers, timer{at: w, key: g.key})
	}
}

// due marks dirty every group whose wake-up is at or before now.
func (e *Engine) due(now time.Time) {
	for e.timers.Len() > 0 && !e.timers[0].at.After(now) {
		t := heap.Pop(&e.timers).(timer)
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
	for e.timers.Len() > 0 {
		t := e.timers[0]
		if g := e.groups[t.key]; g != nil && g.started && g.armed.Equal(t.at) {
			return t.at
		}
		heap.Pop(&e.timers)
	}
	return time.Time{}
}
