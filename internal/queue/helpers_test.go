package queue_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/queue"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func gpuNodes(prefix string, count int, gpus int64) []*corev1.Node {
	return gt.Nodes(prefix, count, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(gpus) })
}

func gpus(n int64) cluster.Resources { return cluster.Resources{gt.GPU: n} }

// entryBuilder builds a queue entry of identical one-shape members in queue team-a,
// queued at t0.
type entryBuilder struct {
	e     queue.Entry
	group *gt.GroupBuilder
}

func entry(key string, members int, gpu int64) *entryBuilder {
	return &entryBuilder{
		e:     queue.Entry{Key: key, Queue: "team-a", QueuedAt: t0},
		group: gt.Group(key).Members(members).GPU(gpu),
	}
}

func (b *entryBuilder) in(q string) *entryBuilder               { b.e.Queue = q; return b }
func (b *entryBuilder) prio(p int32) *entryBuilder              { b.e.Priority = p; return b }
func (b *entryBuilder) requeued() *entryBuilder                 { b.e.Requeued = true; return b }
func (b *entryBuilder) min(n int) *entryBuilder                 { b.group.Min(n); return b }
func (b *entryBuilder) floor(r cluster.Resources) *entryBuilder { b.e.MinCharge = r; return b }
func (b *entryBuilder) with(f func(*gt.PodBuilder) *gt.PodBuilder) *entryBuilder {
	b.group.With(f)
	return b
}

func (b *entryBuilder) at(d time.Duration) *entryBuilder {
	b.e.QueuedAt = t0.Add(d)
	return b
}

func (b *entryBuilder) build() queue.Entry {
	e := b.e
	e.Group = b.group.Build()
	return e
}

// summary renders a result one line per group, admitted first, in order:
// "admit KEY CHARGE on NODES" and "wait KEY #POSITION: REASON", with "(impossible)" when
// the reason says so, then the reservations.
func summary(r queue.Result) []string {
	var out []string
	for _, a := range r.Admitted {
		var nodes []string
		for _, as := range a.Plan.Assignments {
			nodes = append(nodes, as.Node)
		}
		slices.Sort(nodes)
		out = append(out, fmt.Sprintf("admit %s %s on %s", a.Key, a.Charge, strings.Join(slices.Compact(nodes), ",")))
	}
	for _, w := range r.Waiting {
		line := fmt.Sprintf("wait %s #%d: %s", w.Key, w.Position, w.Reason)
		if w.Reason.Impossible() {
			line += " (impossible)"
		}
		out = append(out, line)
	}
	for _, res := range r.Reservations {
		out = append(out, fmt.Sprintf("reserve %s since %s: %s", res.Key, res.Since.Sub(t0), strings.Join(res.Nodes, ",")))
	}
	return out
}
