package engine

import "time"

// timers is a min-heap of group wake-ups. Entries are not removed when a group's wake-up
// changes; a popped entry that no longer matches its group's WakeAt is skipped.
type timers []timer

type timer struct {
	at  time.Time
	key string
}

func (t timers) Len() int { return len(t) }

// push and pop keep the heap ordered by time. They are container/heap's algorithm on
// the typed slice: through heap.Push and heap.Pop each timer was boxed twice, which
// made 2.5% of the objects a month's replay allocated.
func (t *timers) push(x timer) {
	*t = append(*t, x)
	h := *t
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].at.Before(h[parent].at) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (t *timers) pop() timer {
	h := *t
	top, n := h[0], len(h)-1
	h[0] = h[n]
	h[n] = timer{} // the key is not kept alive
	h = h[:n]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < n && h[l].at.Before(h[least].at) {
			least = l
		}
		if r < n && h[r].at.Before(h[least].at) {
			least = r
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	*t = h
	return top
}

// arm records a group's wake-up, if it has one.
func (e *Engine) arm(g *group) {
	if !g.started {
		return
	}
	if w := g.wakeAt(); !w.IsZero() && !w.Equal(g.armed) {
		g.armed = w
		e.timers.push(timer{at: w, key: g.key})
	}
}

// due marks dirty every group whose wake-up is at or before now.
func (e *Engine) due(now time.Time) {
	for e.timers.Len() > 0 && !e.timers[0].at.After(now) {
		t := e.timers.pop()
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
		e.timers.pop()
	}
	return time.Time{}
}
