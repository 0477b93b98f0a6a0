package kubefit

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// memInformer is a SharedIndexInformer over objects muster already holds, with no client
// and no goroutine: kube-scheduler's plugins take their listers and assume caches from
// informers, and this one is filled by replace, which calls the registered handlers
// synchronously, as a synced informer's events would. It is never run.
type memInformer struct {
	indexer  cache.Indexer
	handlers []cache.ResourceEventHandler
}

func newMemInformer() *memInformer {
	return &memInformer{indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
}

// replace makes objs the informer's contents, telling the handlers what was added,
// updated (a different object under the same key) and deleted.
func (m *memInformer) replace(objs []runtime.Object) error {
	want := make(map[string]runtime.Object, len(objs))
	for _, o := range objs {
		key, err := cache.MetaNamespaceKeyFunc(o)
		if err != nil {
			return err
		}
		want[key] = o
	}
	for _, old := range m.indexer.List() {
		key, _ := cache.MetaNamespaceKeyFunc(old)
		if _, ok := want[key]; ok {
			continue
		}
		if err := m.indexer.Delete(old); err != nil {
			return err
		}
		for _, h := range m.handlers {
			h.OnDelete(old)
		}
	}
	for key, o := range want {
		old, exists, _ := m.indexer.GetByKey(key)
		if exists && old == any(o) {
			continue
		}
		if err := m.indexer.Add(o); err != nil {
			return err
		}
		for _, h := range m.handlers {
			if exists {
				h.OnUpdate(old, o)
			} else {
				h.OnAdd(o, false)
			}
		}
	}
	return nil
}

func (m *memInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	m.handlers = append(m.handlers, h)
	for _, o := range m.indexer.List() {
		h.OnAdd(o, true)
	}
	return synced{}, nil
}

func (m *memInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, _ time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return m.AddEventHandler(h)
}

func (m *memInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, _ cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return m.AddEventHandler(h)
}

func (m *memInformer) RemoveEventHandler(cache.ResourceEventHandlerRegistration) error { return nil }
func (m *memInformer) GetStore() cache.Store                                           { return m.indexer }
func (m *memInformer) GetController() cache.Controller                                 { return nil }
func (m *memInformer) Run(stop <-chan struct{})                                        { <-stop }
func (m *memInformer) RunWithContext(ctx context.Context)                              { <-ctx.Done() }
func (m *memInformer) HasSynced() bool                                                 { return true }
func (m *memInformer) HasSyncedChecker() cache.DoneChecker                             { return doneChecker{} }
func (m *memInformer) LastSyncResourceVersion() string                                 { return "" }
func (m *memInformer) SetWatchErrorHandler(cache.WatchErrorHandler) error              { return nil }
func (m *memInformer) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return nil
}
func (m *memInformer) SetTransform(cache.TransformFunc) error { return nil }
func (m *memInformer) IsStopped() bool                        { return false }
func (m *memInformer) AddIndexers(indexers cache.Indexers) error {
	return m.indexer.AddIndexers(indexers)
}
func (m *memInformer) GetIndexer() cache.Indexer { return m.indexer }

// synced is the registration of a handler on a memInformer: synced at once.
type synced struct{}

func (synced) HasSynced() bool                     { return true }
func (synced) HasSyncedChecker() cache.DoneChecker { return doneChecker{} }

// doneChecker is done from the start.
type doneChecker struct{}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (doneChecker) Name() string          { return "kubefit" }
func (doneChecker) Done() <-chan struct{} { return closed }
