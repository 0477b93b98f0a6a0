package dashboard

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// QueueRow is one Queue: per resource its quota, what its groups use, what it
// borrows from its cohort and what it lends, and its pending groups.
type QueueRow struct {
	Name, Cohort string
	Resources    []ResourceRow
	Pending      []Pending
	Admitted     int32
}

// ResourceRow is one resource of a queue; empty strings are "none".
type ResourceRow struct {
	Name                        string
	Quota, Used, Borrowed, Lent string
	UsedPercent                 float64
}

// Pending is one group waiting in a queue.
type Pending struct {
	Group, Link, Phase string
	// Kind and Reason are muster's recorded wait (WaitingKind, Waiting).
	Kind, Reason string
	Since        time.Time
	Waited       string
	// Starts is when muster expects a queued group to start, as "in 25m0s at 12:25 UTC",
	// or why it cannot tell.
	Starts   string
	priority int32
}

// queueRows builds the queues page: the Queue objects muster wrote status on, and the
// groups the lifecycle records place in each (a group in a queue with no Queue object,
// the default queue of a cluster with none, gets a row of its own).
func queueRows(m *model, now time.Time) []QueueRow {
	rows := map[string]*QueueRow{}
	var names []string
	row := func(name string) *QueueRow {
		if r := rows[name]; r != nil {
			return r
		}
		rows[name] = &QueueRow{Name: name}
		names = append(names, name)
		return rows[name]
	}
	lent := lending(m.queues)
	for i := range m.queues {
		q := &m.queues[i]
		r := row(q.Name)
		r.Cohort, r.Admitted = q.Spec.Cohort, q.Status.AdmittedGroups
		r.Resources = resourceRows(q, lent[q.Name])
	}
	for _, k := range m.keys {
		g := m.groups[k]
		if g.record == nil || g.record.Queue == "" || !pending(g.record.Phase) {
			continue
		}
		since := waitingSince(g)
		row(g.record.Queue).Pending = append(row(g.record.Queue).Pending, Pending{
			Group: g.ref.Namespace + "/" + g.ref.Name, Link: groupLink(g.ref), Phase: g.record.Phase,
			Kind: g.record.WaitingKind, Reason: g.record.Waiting, Since: since,
			Waited: now.Sub(since).Round(time.Second).String(), Starts: expectedStart(g.record, now), priority: priority(g),
		})
	}
	sort.Strings(names)
	out := make([]QueueRow, 0, len(names))
	for _, n := range names {
		r := rows[n]
		// muster's order within a queue: priority, then first (re)queued first.
		sort.SliceStable(r.Pending, func(i, j int) bool {
			a, b := r.Pending[i], r.Pending[j]
			if a.priority != b.priority {
				return a.priority > b.priority
			}
			return a.Since.Before(b.Since)
		})
		out = append(out, *r)
	}
	return out
}

// pending reports whether a group in phase waits for admission.
func pending(phase string) bool {
	return phase == "Queued" || phase == "Gathering" || phase == "Impossible" || phase == "Backoff"
}

// waitingSince is when the group was last queued: the end of its last attempt, or when
// it was first seen.
func waitingSince(g *group) time.Time {
	t := g.since()
	for _, a := range g.record.Attempts {
		if a.EndedAt.After(t) {
			t = a.EndedAt.Time
		}
	}
	return t
}

// priority is the highest pod priority among g's members.
func priority(g *group) int32 {
	var p int32
	for i, pod := range g.pods {
		if pod.Spec.Priority != nil && (i == 0 || *pod.Spec.Priority > p) {
			p = *pod.Spec.Priority
		}
	}
	return p
}

// resourceRows lists a queue's resources: those of its quota, then any it uses
// beyond them.
func resourceRows(q *musterv1alpha1.Queue, lent corev1.ResourceList) []ResourceRow {
	seen := map[corev1.ResourceName]bool{}
	var names []corev1.ResourceName
	for _, l := range []corev1.ResourceList{q.Spec.Quota, q.Status.Used} {
		for n := range l {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	out := make([]ResourceRow, 0, len(names))
	for _, n := range names {
		r := ResourceRow{Name: string(n), Quota: text(q.Spec.Quota, n), Used: text(q.Status.Used, n),
			Borrowed: text(q.Status.Borrowed, n), Lent: text(lent, n)}
		quota, used := q.Spec.Quota[n], q.Status.Used[n]
		if quota.MilliValue() > 0 {
			r.UsedPercent = min(100, 100*float64(used.MilliValue())/float64(quota.MilliValue()))
		}
		out = append(out, r)
	}
	return out
}

func text(l corev1.ResourceList, n corev1.ResourceName) string {
	if q, ok := l[n]; ok {
		return q.String()
	}
	return ""
}

// lending returns, per queue, what it lends: of what the queues of its cohort borrow,
// the part its unused quota covers. Queues are charged in name order, so the figures
// are one consistent account of who lends what, not the only one possible.
func lending(queues []musterv1alpha1.Queue) map[string]corev1.ResourceList {
	borrowed := map[string]map[corev1.ResourceName]int64{}
	for _, q := range queues {
		if q.Spec.Cohort == "" {
			continue
		}
		if borrowed[q.Spec.Cohort] == nil {
			borrowed[q.Spec.Cohort] = map[corev1.ResourceName]int64{}
		}
		for n, v := range q.Status.Borrowed {
			borrowed[q.Spec.Cohort][n] += v.MilliValue()
		}
	}
	out := map[string]corev1.ResourceList{}
	for _, q := range queues {
		left := borrowed[q.Spec.Cohort]
		for n, quota := range q.Spec.Quota {
			used := q.Status.Used[n]
			unused := quota.MilliValue() - used.MilliValue()
			give := min(unused, left[n])
			if give <= 0 {
				continue
			}
			left[n] -= give
			if out[q.Name] == nil {
				out[q.Name] = corev1.ResourceList{}
			}
			out[q.Name][n] = *resource.NewMilliQuantity(give, quota.Format)
		}
	}
	return out
}

// expectedStart renders a pending group's expected start from its record: when muster
// expects it (its queue's forecast), or why it cannot tell.
func expectedStart(rec *musterv1alpha1.GroupLifecycle, now time.Time) string {
	switch {
	case rec.Phase != "Queued":
		return ""
	case rec.ExpectedStart != nil:
		at := rec.ExpectedStart.UTC()
		if d := at.Sub(now); d > 0 {
			return fmt.Sprintf("expected start in %s, at %s UTC", d.Round(time.Second), at.Format("15:04"))
		}
		return fmt.Sprintf("expected start now (due at %s UTC)", at.Format("15:04"))
	case rec.ExpectedStartUnknown != "":
		return "expected start unknown: " + rec.ExpectedStartUnknown
	}
	return ""
}
