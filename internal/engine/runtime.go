package engine

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// AnnotationExpectedRuntime, on a group's member pods, declares how long the group runs
// once its members are Ready, as a Go duration ("90m", "2h30m").
const AnnotationExpectedRuntime = "muster.dev/expected-runtime"

// Runtime sources, for Status.RuntimeSource.
const (
	RuntimeDeclared = "Declared" // GroupSpec.ExpectedRuntime or the annotation
	RuntimeDeadline = "ActiveDeadlineSeconds"
	RuntimeHistory  = "History"
)

// historyLen bounds the run times remembered per owner kind and queue; historyKeys
// bounds how many such pairs are remembered (the oldest pair is forgotten first).
const (
	historyLen  = 16
	historyKeys = 256
)

// history remembers what finished groups took, per owner kind and queue: the estimate
// of a group that declares nothing.
type history struct {
	runs  map[string][]time.Duration
	order []string // keys, oldest first
}

func historyKey(g *group, queue string) string {
	kind := string(g.spec.Source)
	if g.spec.Owner != nil {
		kind = g.spec.Owner.Kind
	}
	return kind + "/" + queue
}

// record adds a finished run.
func (h *history) record(key string, d time.Duration) {
	if h.runs == nil {
		h.runs = map[string][]time.Duration{}
	}
	runs, seen := h.runs[key]
	if !seen {
		h.order = append(h.order, key)
		if len(h.order) > historyKeys {
			delete(h.runs, h.order[0])
			h.order = h.order[1:]
		}
	}
	runs = append(runs, d)
	if len(runs) > historyLen {
		runs = runs[1:]
	}
	h.runs[key] = runs
}

// median returns the median of the runs remembered for key, or false if none is.
func (h *history) median(key string) (time.Duration, bool) {
	runs := h.runs[key]
	if len(runs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(runs))
	return s[len(s)/2], true
}

// runtimeOf returns how long g is expected to run and where that comes from, or zero
// and why it is unknown. The group's declared run time comes first, then its members'
// activeDeadlineSeconds (the shortest), then the history of its owner kind and queue.
// An annotation that is not a positive duration is reported as the reason.
func (e *Engine) runtimeOf(g *group) (time.Duration, string) {
	if g.spec.ExpectedRuntime > 0 {
		return g.spec.ExpectedRuntime, RuntimeDeclared
	}
	if d, from := g.membersRuntime(); d > 0 || from != "" {
		return d, from
	}
	if d, ok := e.history.median(historyKey(g, e.queueOf(g))); ok {
		return d, RuntimeHistory
	}
	return 0, fmt.Sprintf("no run time declared (annotation %s or activeDeadlineSeconds) and no %s group has finished yet",
		AnnotationExpectedRuntime, historyKey(g, e.queueOf(g)))
}

// membersRuntime returns the run time g's members declare and where it comes from, or
// why an annotation is not a run time, or zero and "" when they declare none. It is
// read again only when the members changed (group.membersGen): a group's run time is
// asked for on every step of it and every forecast, and reading it meant sorting the
// members and parsing an annotation.
func (g *group) membersRuntime() (time.Duration, string) {
	c := &g.declared
	if !c.ok || c.gen != g.membersGen {
		d, from := g.readMembersRuntime()
		*c = declaredRuntime{gen: g.membersGen, ok: true, d: d, from: from}
	}
	return c.d, c.from
}

// declaredRuntime is what membersRuntime read, for members generation gen.
type declaredRuntime struct {
	gen  uint64
	ok   bool
	d    time.Duration
	from string
}

// readMembersRuntime is membersRuntime, read from the members: the annotation of the
// first member by key that has one, else the shortest deadline. The members are not
// sorted for it: that was a third of the key lists a replay made.
func (g *group) readMembersRuntime() (time.Duration, string) {
	var deadline time.Duration
	var annotated, value string
	for key, p := range g.members {
		if v, ok := p.Annotations[AnnotationExpectedRuntime]; ok && (annotated == "" || key < annotated) {
			annotated, value = key, v
		}
		if s := p.Spec.ActiveDeadlineSeconds; s != nil && *s > 0 {
			if d := time.Duration(*s) * time.Second; deadline == 0 || d < deadline {
				deadline = d
			}
		}
	}
	if annotated != "" {
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return 0, fmt.Sprintf("pod %s: annotation %s: %q is not a positive duration", annotated, AnnotationExpectedRuntime, value)
		}
		return d, RuntimeDeclared
	}
	if deadline > 0 {
		return deadline, RuntimeDeadline
	}
	return 0, ""
}

// expectedEnd returns when an admitted group is expected to release its nodes, and
// false when that is unknown. A running group keeps the run time it was expected to
// have when it became Running.
func (e *Engine) expectedEnd(g *group) (time.Time, bool) {
	switch g.state.Phase() {
	case lifecycle.Running, lifecycle.Recovering:
		if g.runFor == 0 {
			return time.Time{}, false
		}
		return g.runningSince.Add(g.runFor), true
	}
	d, _ := e.runtimeOf(g)
	if d == 0 {
		return time.Time{}, false
	}
	return e.now.Add(d), true // not started yet: it runs for d from about now
}

// end is when a group is expected to give back what it holds, if known.
type end struct {
	at    time.Time
	known bool
}

// endOf is when g is expected to give back what it holds: now while it is being
// evicted, else its expected end.
func (e *Engine) endOf(g *group, now time.Time) end {
	if len(g.evicting) > 0 {
		return end{now, true}
	}
	at, known := e.expectedEnd(g)
	return end{at, known}
}

// endMoves reports whether a started group's expected end (endOf) moves with the
// clock: while it is being evicted, it is now; before it runs, it is its run time from
// now, and the run time may change (runtimeOf reads the history). A running group's end
// stays the same until its phase or eviction changes.
func endMoves(g *group) bool {
	if len(g.evicting) > 0 {
		return true
	}
	switch g.state.Phase() {
	case lifecycle.Running, lifecycle.Recovering:
		return false
	}
	return true
}

// groupsOn returns the groups with a member the snapshot counts on one of nodes: every
// group with a live member bound or being bound there.
func (e *Engine) groupsOn(nodes []string) []*group {
	var out []*group
	seen := map[string]bool{}
	for _, n := range nodes {
		info := e.snap.Node(n)
		if info == nil {
			continue
		}
		for key := range info.Pods() {
			gk, ok := e.podGroup[key]
			if !ok || seen[gk] {
				continue
			}
			seen[gk] = true
			if g := e.groups[gk]; g != nil {
				out = append(out, g)
			}
		}
	}
	return out
}

// FreeAt reports when nodes are expected to be free of the pods on them now: the latest
// expected end of the groups holding them, and false when some group's end is unknown
// or some pod on them is not muster's (queue.Estimator). Members being evicted are
// expected to go now.
func (e *Engine) FreeAt(nodes []string) (time.Time, bool) {
	held := make(map[string]cluster.Resources, len(nodes))
	for _, n := range nodes {
		held[n] = cluster.Resources{}
	}
	latest := e.now
	for _, g := range e.groupsOn(nodes) {
		if !g.started {
			continue
		}
		on := false
		for key, p := range g.members {
			if n := g.nodeOf(key, p); n != "" && !terminal(p) && held[n] != nil {
				on = true
				held[n].Add(g.requests[key])
			}
		}
		if !on || len(g.evicting) > 0 {
			continue
		}
		end, ok := e.expectedEnd(g)
		if !ok {
			return time.Time{}, false
		}
		if end.After(latest) {
			latest = end
		}
	}
	for _, n := range nodes {
		info := e.snap.Node(n)
		if info == nil {
			return time.Time{}, false
		}
		for name, v := range info.Requested {
			if name != corev1.ResourcePods && v > held[n][name] {
				return time.Time{}, false // pods that are not muster's: their end is unknown
			}
		}
	}
	return latest, true
}
