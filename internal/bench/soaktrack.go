package bench

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// readyTracker watches the pods of a namespace and tells when every pod of an
// expected gang is Ready; it counts the pods it saw bound.
type readyTracker struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	jobs  map[string]*gangWatch
	bound int64
}

// gangWatch is one expected gang: its size, its pods seen bound and Ready, and the
// channel closed once all are Ready.
type gangWatch struct {
	size         int
	bound, ready map[string]bool
	all          chan struct{}
}

// trackReady starts watching the pods of ns and waits for the watch to sync.
func trackReady(ctx context.Context, client kubernetes.Interface, ns string) (*readyTracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	t := &readyTracker{cancel: cancel, done: make(chan struct{}), jobs: map[string]*gangWatch{}}
	see := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			t.see(p)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj any) { see(obj) }}); err != nil {
		cancel()
		return nil, fmt.Errorf("watching pods of %s: %w", ns, err)
	}
	go func() {
		defer close(t.done)
		inf.RunWithContext(ctx)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.stop()
		return nil, fmt.Errorf("watching pods of %s: expected the pod cache to sync, found %w", ns, ctx.Err())
	}
	return t, nil
}

// expect registers gang job of size pods, before its pods are created, and returns
// the channel closed once all are Ready.
func (t *readyTracker) expect(job string, size int) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := &gangWatch{size: size, bound: map[string]bool{}, ready: map[string]bool{}, all: make(chan struct{})}
	t.jobs[job] = g
	return g.all
}

// forget drops gang job.
func (t *readyTracker) forget(job string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.jobs, job)
}

// see records p bound and Ready if it is, for its expected gang.
func (t *readyTracker) see(p *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.jobs[p.Labels[LabelJob]]
	if g == nil {
		return
	}
	if p.Spec.NodeName != "" && !g.bound[p.Name] {
		g.bound[p.Name] = true
		t.bound++
	}
	if podReady(p) && !g.ready[p.Name] {
		g.ready[p.Name] = true
		if len(g.ready) == g.size {
			close(g.all)
		}
	}
}

// boundCount returns how many pods of expected gangs were seen bound.
func (t *readyTracker) boundCount() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bound
}

// stop ends the watch and waits for it to return.
func (t *readyTracker) stop() {
	t.cancel()
	<-t.done
}
