package bench

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// observer watches the pods of one run and records, per pod, when it was first seen
// bound (spec.nodeName set) and first seen Ready. Times are the observer's: the same
// watch serves every runner, so its latency is the same for all.
type observer struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	done     chan struct{}

	mu       sync.Mutex
	job      map[string]string // pod name → job
	node     map[string]string // pod name → node it was bound to
	bound    map[string]time.Time
	ready    map[string]time.Time
	released map[string]time.Time // node → when its holder was seen deleted
	changed  chan struct{}        // signalled (non-blocking) on every new observation
}

// observe starts watching the pods of namespace ns and waits for the watch to sync.
func observe(ctx context.Context, client kubernetes.Interface, ns string) (*observer, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	o := &observer{
		informer: f.Core().V1().Pods().Informer(), cancel: cancel, done: make(chan struct{}),
		job: map[string]string{}, node: map[string]string{}, bound: map[string]time.Time{}, ready: map[string]time.Time{},
		released: map[string]time.Time{}, changed: make(chan struct{}, 1),
	}
	record := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			o.record(p, time.Now())
		}
	}
	if _, err := o.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				o.recordDelete(p, time.Now())
			}
		},
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("watching pods of %s: %w", ns, err)
	}
	go func() {
		defer close(o.done)
		o.informer.RunWithContext(ctx)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), o.informer.HasSynced) {
		o.stop()
		return nil, fmt.Errorf("watching pods of %s: expected the pod cache to sync, found %w", ns, ctx.Err())
	}
	return o, nil
}

// record notes the first time p is seen bound and Ready. Pods of no job (the
// probe) are not recorded.
func (o *observer) record(p *corev1.Pod, now time.Time) {
	if p.Labels[LabelJob] == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.job[p.Name] = p.Labels[LabelJob]
	news := false
	if _, seen := o.bound[p.Name]; !seen && p.Spec.NodeName != "" {
		o.bound[p.Name], o.node[p.Name], news = now, p.Spec.NodeName, true
	}
	if _, seen := o.ready[p.Name]; !seen && podReady(p) {
		o.ready[p.Name], news = now, true
	}
	if news {
		select {
		case o.changed <- struct{}{}:
		default:
		}
	}
}

// recordDelete notes the first time a holder pod is seen deleted, as its node's
// release; other deletions are not recorded.
func (o *observer) recordDelete(p *corev1.Pod, now time.Time) {
	node := p.Labels[LabelHolder]
	if node == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.released[node]; !seen {
		o.released[node] = now
	}
}

// podReady reports whether p has the Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// boundCount returns how many pods have been seen bound.
func (o *observer) boundCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.bound)
}

// waitBound waits until n pods have been seen bound, or ctx ends.
func (o *observer) waitBound(ctx context.Context, n int) error { return o.waitQuiet(ctx, n, 0) }

// waitQuiet waits until n pods have been seen bound, or, when quiet is not zero, no pod
// has been newly seen bound or Ready for quiet, or ctx ends; only the last is an error.
func (o *observer) waitQuiet(ctx context.Context, n int, quiet time.Duration) error {
	var timer *time.Timer
	var timeout <-chan time.Time // nil, never ready, without quiet
	if quiet > 0 {
		timer = time.NewTimer(quiet)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		got := o.boundCount()
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d pods to be bound: found %d bound when %w", n, got, ctx.Err())
		case <-timeout:
			return nil
		case <-o.changed:
			if timer != nil {
				timer.Reset(quiet)
			}
		}
	}
}

// stop ends the watch and waits for it to return.
func (o *observer) stop() {
	o.cancel()
	<-o.done
}

// timeline is what an observer saw, frozen: per pod, its job and its bind and Ready
// times.
type timeline struct {
	job, node    map[string]string
	bound, ready map[string]time.Time
	// released is when each node's holder was seen deleted (deep-queue).
	released map[string]time.Time
	// sizes, if set, is each job's minMember, in place of the one a caller gives
	// (deep-queue, whose groups are of two sizes).
	sizes map[string]int
}

// minOf returns job's minMember: its size in t.sizes, else def.
func (t timeline) minOf(job string, def int) int {
	if n, ok := t.sizes[job]; ok {
		return n
	}
	return def
}

// snapshot copies what the observer has seen so far.
func (o *observer) snapshot() timeline {
	o.mu.Lock()
	defer o.mu.Unlock()
	return timeline{
		job: maps.Clone(o.job), node: maps.Clone(o.node), bound: maps.Clone(o.bound), ready: maps.Clone(o.ready),
		released: maps.Clone(o.released),
	}
}

// lastBind returns the latest bind time, and false if no pod was bound.
func (t timeline) lastBind() (time.Time, bool) {
	var last time.Time
	for _, at := range t.bound {
		if at.After(last) {
			last = at
		}
	}
	return last, !last.IsZero()
}

// firstWhole returns when the first job had minMember pods in times (bind or Ready
// times), and false if none did.
func (t timeline) firstWhole(times map[string]time.Time, minMember int) (time.Time, bool) {
	perJob := map[string][]time.Time{}
	for pod, at := range times {
		perJob[t.job[pod]] = append(perJob[t.job[pod]], at)
	}
	var first time.Time
	for job, ts := range perJob {
		minMember := t.minOf(job, minMember)
		if len(ts) < minMember {
			continue
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		if at := ts[minMember-1]; first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// heldGPUSeconds integrates, over [from, to), the GPUs bound to jobs that have fewer
// than minMember pods bound, each pod holding gpusPerPod from its bind time. It is
// exact over the observed bind times rather than sampled: a job that is bound whole
// contributes only the spread between its first and its minMember-th bind.
//
// stranded is the part held by jobs that were still not whole at to: capacity that a
// partial job kept from every other job, as against the moments between the binds
// of a job that became whole.
func (t timeline) heldGPUSeconds(from, to time.Time, minMember, gpusPerPod int) (held, stranded float64) {
	perJob := map[string][]time.Time{}
	for pod, at := range t.bound {
		perJob[t.job[pod]] = append(perJob[t.job[pod]], at)
	}
	for job, ts := range perJob {
		minMember := t.minOf(job, minMember)
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		whole := len(ts) >= minMember && ts[minMember-1].Before(to)
		// Between the k-th and (k+1)-th bind, k pods are bound; once minMember are
		// bound the job is whole and holds nothing idle any more.
		for k := 1; k <= len(ts) && k < minMember; k++ {
			end := to
			if k < len(ts) {
				end = ts[k]
			}
			gpuSeconds := float64(k*gpusPerPod) * overlap(ts[k-1], end, from, to).Seconds()
			held += gpuSeconds
			if !whole {
				stranded += gpuSeconds
			}
		}
	}
	return held, stranded
}

// overlap returns the length of [a, b) ∩ [from, to).
func overlap(a, b, from, to time.Time) time.Duration {
	if a.Before(from) {
		a = from
	}
	if b.After(to) {
		b = to
	}
	if !b.After(a) {
		return 0
	}
	return b.Sub(a)
}
