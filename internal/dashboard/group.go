package dashboard

import (
	"fmt"
	"net/url"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

// groupLink returns the path of a group's page.
func groupLink(ref source.Ref) string {
	q := url.Values{"source": {string(ref.Source)}, "namespace": {ref.Namespace}, "name": {ref.Name}}
	return "group?" + q.Encode()
}

// refOf reads a group's reference from a page's query; ok is false, with the problem,
// when a parameter is missing or names no source muster knows.
func refOf(q url.Values) (source.Ref, string) {
	ref := source.Ref{Source: engine.Source(q.Get("source")), Namespace: q.Get("namespace"), Name: q.Get("name")}
	switch ref.Source {
	case engine.Coscheduling, engine.Volcano, engine.Native, engine.Labels, engine.Single:
	default:
		return ref, fmt.Sprintf("source %q: expected one of Coscheduling, Volcano, Native, Labels, Single", ref.Source)
	}
	if ref.Namespace == "" || ref.Name == "" {
		return ref, fmt.Sprintf("namespace %q, name %q: expected both", ref.Namespace, ref.Name)
	}
	return ref, ""
}

// explainTarget returns the `muster explain` target of a group, or "" for a group of
// one, which explain does not walk.
func explainTarget(ref source.Ref) string {
	switch ref.Source {
	case engine.Labels:
		return ref.Name
	case engine.Single:
		return ""
	}
	return "podgroup/" + ref.Name
}

// Span is one stretch of a group's timeline.
type Span struct {
	Stage    string
	From, To time.Time
	// Took is To-From, rounded; Width its share of the timeline, in percent.
	Took  string
	Width float64
	Note  string
	// Class colours the span like the heat map's cells.
	Class Hold
}

// Member is one member pod, as the group page lists it.
type Member struct {
	Pod, Node, Phase string
	Ready            bool
}

// timeline returns the spans of g's life until now, from muster's record of its
// attempts and, for the current attempt, its members' PodScheduled and Ready
// conditions.
func timeline(g *group, now time.Time) []Span {
	var spans []Span
	add := func(stage string, from, to time.Time, class Hold, note string) {
		if from.IsZero() || to.Before(from) {
			return
		}
		spans = append(spans, Span{Stage: stage, From: from, To: to, Took: to.Sub(from).Round(time.Second).String(), Class: class, Note: note})
	}
	waiting := g.since()
	rec := g.record
	if rec == nil {
		add("seen (no record from muster yet)", waiting, now, Free, "")
		return widths(spans)
	}
	attempts := append(rec.Attempts[:0:0], rec.Attempts...)
	sort.Slice(attempts, func(i, j int) bool { return attempts[i].Number < attempts[j].Number })
	for _, a := range attempts {
		add("queued", waiting, a.AdmittedAt.Time, Free, "")
		add(fmt.Sprintf("attempt %d", a.Number), a.AdmittedAt.Time, a.EndedAt.Time, Held,
			fmt.Sprintf("ended in %s: %s %s", a.Stage, a.Reason, a.Message))
		waiting = a.EndedAt.Time
	}
	if rec.AdmittedAt == nil || rec.Attempt <= len(attempts) {
		add(rec.Phase, waiting, now, Free, rec.Waiting)
		return widths(spans)
	}
	admitted := rec.AdmittedAt.Time
	add("queued", waiting, admitted, Free, "")
	bound := nth(g.pods, corev1.PodScheduled, rec.MinMember, admitted)
	ready := nth(g.pods, corev1.PodReady, rec.MinMember, admitted)
	switch {
	case bound.IsZero():
		add("binding", admitted, now, Starting, "")
	case ready.IsZero():
		add("binding", admitted, bound, Starting, "")
		add("starting", bound, now, Starting, "")
	default:
		add("binding", admitted, bound, Starting, "")
		add("starting", bound, ready, Starting, "")
		class := Training
		if rec.Phase != "Running" {
			class = Held
		}
		add(rec.Phase, ready, now, class, rec.Message)
	}
	return widths(spans)
}

// nth returns when the n-th of pods (by time) got condition True, counting only
// transitions at or after since; zero when fewer than n did.
func nth(pods []*corev1.Pod, cond corev1.PodConditionType, n int, since time.Time) time.Time {
	var times []time.Time
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == cond && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
				times = append(times, c.LastTransitionTime.Time)
			}
		}
	}
	if n < 1 {
		n = 1
	}
	if len(times) < n {
		return time.Time{}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times[n-1]
}

// widths sets each span's share of the whole timeline.
func widths(spans []Span) []Span {
	if len(spans) == 0 {
		return spans
	}
	total := spans[len(spans)-1].To.Sub(spans[0].From).Seconds()
	for i := range spans {
		if total > 0 {
			spans[i].Width = max(100*spans[i].To.Sub(spans[i].From).Seconds()/total, 0.5)
		} else {
			spans[i].Width = 100 / float64(len(spans))
		}
	}
	return spans
}

// members lists g's pods, by name.
func members(g *group) []Member {
	out := make([]Member, 0, len(g.pods))
	for _, p := range g.pods {
		m := Member{Pod: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase)}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				m.Ready = c.Status == corev1.ConditionTrue
			}
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}
