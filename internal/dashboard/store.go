package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LedgerConfigMap is the ConfigMap, in muster's namespace, that the ledger is kept in
// so that the cost of the last day survives a restart (and a new leader) of muster,
// and `muster dashboard` can show it; LedgerKey is its data key.
const (
	LedgerConfigMap = "muster-cost-ledger"
	LedgerKey       = "ledger.json"
)

// storedLedger is the ledger as kept in the ConfigMap.
type storedLedger struct {
	Buckets []storedBucket `json:"buckets"`
}

type storedBucket struct {
	// Minute is the bucket's start, in Unix minutes.
	Minute         int64              `json:"minute"`
	Queue          string             `json:"queue"`
	Held           map[string]float64 `json:"held,omitempty"`
	CleanupSeconds float64            `json:"cleanupSeconds,omitempty"`
	Cleanups       int                `json:"cleanups,omitempty"`
}

// Encode returns the ledger as kept in LedgerConfigMap, and clears its changed flag.
func (l *Ledger) Encode() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s storedLedger
	for k, b := range l.buckets {
		sb := storedBucket{Minute: k.minute, Queue: k.queue, CleanupSeconds: b.cleanup.Seconds(), Cleanups: b.cleanups, Held: map[string]float64{}}
		for n, v := range b.held {
			sb.Held[string(n)] = v
		}
		s.Buckets = append(s.Buckets, sb)
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the cost ledger: %w", err)
	}
	l.changed = false
	return data, nil
}

// Changed reports whether the ledger counted something since it was last encoded.
func (l *Ledger) Changed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Restore adds a stored ledger's buckets to l. The data is checked first, whole: a
// bucket from the future or older than a day, a negative or non-finite amount, or a
// name longer than an object name can be is refused with an error naming it, and
// nothing is added.
func (l *Ledger) Restore(data []byte, now time.Time) error {
	var s storedLedger
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s %s: %w", LedgerConfigMap, LedgerKey, err)
	}
	newest, oldest := now.Unix()/60+1, now.Add(-ledgerKeep).Unix()/60
	for i, b := range s.Buckets {
		if err := b.check(oldest, newest); err != nil {
			return fmt.Errorf("%s %s: buckets[%d]: %w", LedgerConfigMap, LedgerKey, i, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, sb := range s.Buckets {
		b := l.bucket(sb.Minute, sb.Queue)
		for n, v := range sb.Held {
			b.held[corev1.ResourceName(n)] += v
		}
		b.cleanup += time.Duration(sb.CleanupSeconds * float64(time.Second))
		b.cleanups += sb.Cleanups
	}
	return nil
}

// check validates one stored bucket.
func (b storedBucket) check(oldest, newest int64) error {
	if b.Minute < oldest || b.Minute > newest {
		return fmt.Errorf("minute %d: expected within the last day (%d to %d)", b.Minute, oldest, newest)
	}
	if len(b.Queue) > 253 {
		return fmt.Errorf("queue of %d characters: expected at most 253", len(b.Queue))
	}
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	for n, v := range b.Held {
		if len(n) > 253 || bad(v) {
			return fmt.Errorf("held[%.60q] = %v: expected a resource name and a finite amount >= 0", n, v)
		}
	}
	if bad(b.CleanupSeconds) || b.CleanupSeconds > ledgerKeep.Seconds()*1e3 || b.Cleanups < 0 {
		return fmt.Errorf("cleanupSeconds %v, cleanups %d: expected amounts >= 0", b.CleanupSeconds, b.Cleanups)
	}
	return nil
}

// CostSource is what the cost page reads: a ledger fed in this process, or the one
// muster keeps in its namespace.
type CostSource interface {
	Costs(ctx context.Context, now time.Time, window time.Duration) ([]Cost, error)
}

// StoredCosts reads the ledger muster keeps in LedgerConfigMap of namespace through r
// (a cache that watches that ConfigMap): the cost page of `muster dashboard`.
type StoredCosts struct {
	Reader    client.Reader
	Namespace string
}

// Costs reads the stored ledger and returns its costs over window.
func (s StoredCosts) Costs(ctx context.Context, now time.Time, window time.Duration) ([]Cost, error) {
	var cm corev1.ConfigMap
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: LedgerConfigMap}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no ConfigMap %s/%s yet: the leading muster serve writes it every 30 s once its Configuration sets dashboardAddr", s.Namespace, LedgerConfigMap)
		}
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", s.Namespace, LedgerConfigMap, err)
	}
	l := NewLedger()
	if err := l.Restore([]byte(cm.Data[LedgerKey]), now); err != nil {
		return nil, err
	}
	return l.Costs(ctx, now, window)
}
