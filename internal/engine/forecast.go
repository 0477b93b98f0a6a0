package engine

import (
	"iter"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/forecast"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
)

// Forecast bounds: how many queued groups are planned, how many times capacity is
// freed are tried per group, and how often the forecast is made again by default (see
// Config.ForecastEvery).
const (
	forecastDepth        = 256
	forecastTries        = 512
	DefaultForecastEvery = 10 * time.Second
)

// forecastEvery is how often the queues are forecast at most.
func (e *Engine) forecastEvery() time.Duration {
	if e.cfg.ForecastEvery > 0 {
		return e.cfg.ForecastEvery
	}
	return DefaultForecastEvery
}

// forecastState is the last forecast of the queued groups' starts.
type forecastState struct {
	// at is when it was made; zero before the first.
	at time.Time
	// starts holds each queued group's predicted start, by key, as its status reports
	// it: a new forecast replaces a start only when it moved enough (movedStart).
	starts map[string]forecast.Start
	// stale says the queue or the cluster changed since it was made.
	stale bool
	// nodes holds, by key, the nodes the latest forecast planned each group on: where a
	// starving group's reservation goes (PlannedNodes).
	nodes map[string][]string
}

// refreshForecast plans the queued groups again when the last forecast is stale and at
// least forecastEvery old, and marks changed the groups whose expected start moved
// enough to be worth a status write (see movedStart).
func (e *Engine) refreshForecast(now time.Time, out *Output) {
	f := &e.forecast
	if !f.stale || (!f.at.IsZero() && now.Before(f.at.Add(e.forecastEvery()))) {
		return
	}
	starts := e.planQueue(now)
	f.nodes = make(map[string][]string, len(starts))
	for key, s := range starts {
		if len(s.Nodes) > 0 {
			f.nodes[key] = s.Nodes
		}
		old, ok := f.starts[key]
		if ok && !movedStart(old, s, now) {
			starts[key] = old // what the group's status says stays until it moves enough
			continue
		}
		out.touch(key)
	}
	for key := range f.starts {
		if _, ok := starts[key]; !ok && e.groups[key] != nil {
			out.touch(key)
		}
	}
	f.at, f.starts, f.stale = now, starts, false
}

// forecastWake is when the next forecast is due, or zero.
func (e *Engine) forecastWake() time.Time {
	if !e.forecast.stale || e.forecast.at.IsZero() {
		return time.Time{}
	}
	return e.forecast.at.Add(e.forecastEvery())
}

// movedStart reports whether a group's expected start changed enough to report: it
// became known or unknown, the reason it is unknown changed, or it moved by more than
// a tenth of the wait left and at least a minute.
func movedStart(old, cur forecast.Start, now time.Time) bool {
	if old.At.IsZero() != cur.At.IsZero() {
		return true
	}
	if cur.At.IsZero() {
		return old.Unknown != cur.Unknown
	}
	d := cur.At.Sub(old.At).Abs()
	return d > time.Minute && d > cur.At.Sub(now)/10
}

// planQueue forecasts the starts of the queued groups that wait for nodes, in queue
// order, on the capacity free now and what the running groups release when they are
// expected to end.
func (e *Engine) planQueue(now time.Time) map[string]forecast.Start {
	var groups []forecast.Group
	for ent := range e.queue.InOrder() {
		g := e.groups[ent.Key]
		// A group preempting others is planned too: it takes what its victims release.
		if g == nil || !e.forecastable(g) && e.preempting[ent.Key] == nil {
			continue
		}
		fg := forecast.Group{Key: ent.Key, Runtime: ent.Runtime, Queue: ent.Queue, Charge: e.queue.LeastCharge(ent.Key)}
		for _, m := range ent.Group.Members[:min(ent.Group.MinMember, len(ent.Group.Members))] {
			req := m.Requests
			if req == nil {
				req = cluster.PodRequests(m.Pod)
			}
			fg.Members = append(fg.Members, req) // the forecast ignores its pods count
		}
		groups = append(groups, fg)
		if len(groups) > forecastDepth {
			break // the rest are unknown for the same reason
		}
	}
	if len(groups) == 0 {
		return map[string]forecast.Start{}
	}
	var nodes []forecast.Node
	var releases []forecast.Release
	// What each group's members release, and when, from the pods the snapshot counts on
	// the nodes: bound, or being bound by the engine.
	ends := map[*group]end{}
	for _, n := range e.snap.Nodes() {
		if !n.Ready() || n.Node.Spec.Unschedulable {
			continue
		}
		// The forecast only reads them: no copy.
		nodes = append(nodes, forecast.Node{Name: n.Name(), Free: n.Allocatable, Used: n.Requested})
		for key := range n.Pods() {
			g := e.groups[e.podGroup[key]]
			if g == nil || !g.started {
				continue
			}
			if p := g.members[key]; p == nil || terminal(p) {
				continue
			}
			en, ok := ends[g]
			if !ok {
				en = e.endOf(g, now)
				ends[g] = en
			}
			if en.known { // else its capacity does not come back in the forecast
				releases = append(releases, forecast.Release{Node: n.Name(), Resources: g.requests[key], At: en.at})
			}
		}
	}
	out := make(map[string]forecast.Start, len(groups))
	quotas := e.quotaOutlook(now, groups, ends)
	for _, s := range forecast.Plan(now, nodes, releases, quotas, groups, forecast.Options{Depth: forecastDepth, Tries: forecastTries}) {
		out[s.Key] = s
	}
	return out
}

// forecastable reports whether the forecast plans a queued group: it waits for room, or
// for quota the forecast can tell the freeing of (a queue outside a cohort), or has not
// been decided yet. Groups that are invalid, or can never fit their quota, take no
// capacity in the forecast.
func (e *Engine) forecastable(g *group) bool {
	if g.waiting == nil {
		return true
	}
	switch g.waiting.Kind {
	case queue.Placement, queue.Reserved:
		return true
	case queue.QuotaExceeded:
		return e.queue.OwnQuota(g.waiting.Queue)
	}
	return false
}

// quotaOutlook is the quota of each queue of groups that has one the forecast can
// follow: what is left now, and what each admitted group gives back when it is expected
// to end (ends holds those already known, by group).
func (e *Engine) quotaOutlook(now time.Time, groups []forecast.Group, ends map[*group]end) []forecast.Quota {
	var out []forecast.Quota
	seen := map[string]bool{}
	for _, fg := range groups {
		if seen[fg.Queue] {
			continue
		}
		seen[fg.Queue] = true
		left, holders, ok := e.queue.QuotaLeft(fg.Queue)
		if !ok {
			continue
		}
		q := forecast.Quota{Queue: fg.Queue, Free: left}
		for key, charge := range holders {
			g := e.groups[key]
			if g == nil {
				continue
			}
			en, ok := ends[g]
			if !ok {
				en = e.endOf(g, now)
			}
			if en.known {
				q.Releases = append(q.Releases, forecast.QuotaRelease{At: en.at, Resources: charge})
			}
		}
		out = append(out, q)
	}
	return out
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

// Forecast returns when the queued groups' starts were last forecast (zero before the
// first forecast) and the expected start of each group still queued that has one, by
// key.
func (e *Engine) Forecast() (time.Time, iter.Seq2[string, time.Time]) {
	return e.forecast.at, func(yield func(string, time.Time) bool) {
		for key, s := range e.forecast.starts {
			g := e.groups[key]
			if s.At.IsZero() || g == nil || !g.started || g.state.Phase() != lifecycle.Queued {
				continue
			}
			if !yield(key, s.At) {
				return
			}
		}
	}
}

// PlannedNodes returns the nodes the latest forecast planned queued group key on,
// those where it is expected to start soonest given the groups ahead of it, or nil
// (queue.Estimator).
func (e *Engine) PlannedNodes(key string) []string { return e.forecast.nodes[key] }
