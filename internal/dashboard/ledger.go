package dashboard

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
)

// ledgerKeep is how far back the ledger remembers: the cost page's longest window.
const ledgerKeep = 24 * time.Hour

// Ledger accumulates the cost of gang scheduling from muster's own measurements: the
// resource-seconds groups held before they were Ready (evicted attempts and their
// cleanup included) and the cleanup times of evicted groups, per queue, in one-minute
// buckets for the last day. The scheduler feeds it after each engine Step (Stepped);
// pages read it. Its methods may be called from several goroutines.
type Ledger struct {
	mu sync.Mutex
	// reported is, per group, the HeldBeforeReady already counted.
	reported map[string]map[corev1.ResourceName]float64
	buckets  map[bucketKey]*bucket
	// changed is whether anything was counted since the last Encode.
	changed bool
}

type bucketKey struct {
	minute int64 // Unix minutes
	queue  string
}

type bucket struct {
	held     map[corev1.ResourceName]float64
	cleanup  time.Duration
	cleanups int
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{reported: map[string]map[corev1.ResourceName]float64{}, buckets: map[bucketKey]*bucket{}}
}

// Stepped records what one engine Step at now measured. status reads a group's status
// from the engine; it is called only during Stepped.
func (l *Ledger) Stepped(now time.Time, out engine.Output, status func(key string) (engine.Status, bool)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	minute := now.Unix() / 60
	for _, key := range out.Changed {
		st, ok := status(key)
		if !ok {
			delete(l.reported, key)
			continue
		}
		for name, v := range st.HeldBeforeReady {
			if d := v - l.reported[key][name]; d > 0 {
				b := l.bucket(minute, st.Queue)
				b.held[name] += d
				l.changed = true
				if l.reported[key] == nil {
					l.reported[key] = map[corev1.ResourceName]float64{}
				}
				l.reported[key][name] = v
			}
		}
	}
	for _, r := range out.Released {
		queue := ""
		if st, ok := status(r.Group); ok {
			queue = st.Queue
		}
		b := l.bucket(minute, queue)
		b.cleanup += r.After
		b.cleanups++
		l.changed = true
	}
	for k := range l.buckets {
		if k.minute < (now.Add(-ledgerKeep).Unix() / 60) {
			delete(l.buckets, k)
		}
	}
}

func (l *Ledger) bucket(minute int64, queue string) *bucket {
	k := bucketKey{minute, queue}
	b := l.buckets[k]
	if b == nil {
		b = &bucket{held: map[corev1.ResourceName]float64{}}
		l.buckets[k] = b
	}
	return b
}

// Cost is one queue's cost over one window.
type Cost struct {
	Queue string
	// Held is resource-seconds held before Ready, per resource (devices and cpu).
	Held []Amount
	// Cleanup is the summed cleanup time of the Cleanups evictions that finished.
	Cleanup  time.Duration
	Cleanups int
}

// Amount is one resource's resource-seconds.
type Amount struct {
	Resource string
	Seconds  float64
}

var _ CostSource = (*Ledger)(nil)

// Costs returns each queue's cost over the window ending at now, by queue name.
func (l *Ledger) Costs(_ context.Context, now time.Time, window time.Duration) ([]Cost, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := now.Add(-window).Unix() / 60
	byQueue := map[string]*bucket{}
	for k, b := range l.buckets {
		if k.minute <= from {
			continue
		}
		sum := byQueue[k.queue]
		if sum == nil {
			sum = &bucket{held: map[corev1.ResourceName]float64{}}
			byQueue[k.queue] = sum
		}
		for n, v := range b.held {
			sum.held[n] += v
		}
		sum.cleanup += b.cleanup
		sum.cleanups += b.cleanups
	}
	out := make([]Cost, 0, len(byQueue))
	for q, b := range byQueue {
		c := Cost{Queue: q, Cleanup: b.cleanup, Cleanups: b.cleanups}
		for n, v := range b.held {
			if strings.Contains(string(n), "/") || n == corev1.ResourceCPU {
				c.Held = append(c.Held, Amount{Resource: string(n), Seconds: v})
			}
		}
		sort.Slice(c.Held, func(i, j int) bool { return c.Held[i].Resource < c.Held[j].Resource })
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}
