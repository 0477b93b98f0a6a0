package kubefit

import (
	"context"
	"maps"
	"slices"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
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
	// ordered makes replace tell the handlers of new and changed objects in key order,
	// as an informer's list from the API server comes: a handler whose result depends
	// on the order (the extended resources' map of DeviceClasses) gets a real one.
	ordered bool
}

func newMemInformer() *memInformer {
	return &memInformer{indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
}

// replace makes objs the informer's contents, telling the handlers what was added,
// updated (a different object under the same key) and deleted: deletions first, then
// the changes release selects, then the rest (see claimReleased).
func (m *memInformer) replace(objs []runtime.Object, release func(runtime.Object) bool) error {
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
	keys := maps.Keys(want)
	if m.ordered {
		keys = slices.Values(slices.Sorted(keys))
	}
	for _, releases := range []bool{true, false} {
		for key := range keys {
			o := want[key]
			if release != nil && release(o) != releases {
				continue
			}
			if err := m.set(key, o); err != nil {
				return err
			}
		}
		if release == nil {
			break
		}
	}
	return nil
}

// set stores o under key, telling the handlers, unless it is stored already.
func (m *memInformer) set(key string, o runtime.Object) error {
	old, exists, _ := m.indexer.GetByKey(key)
	if exists && old == any(o) {
		return nil
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
	return nil
}

// claimReleased reports whether a ResourceClaim is unallocated. kube-scheduler's DRA
// manager keeps the allocated devices as a set, updated by claim events: when a load
// moves a device from one claim to another (the empty cluster's what-if allocations,
// another snapshot), the claim that releases it must be seen before the one that takes
// it, or the release would remove the taker's device too.
func claimReleased(o runtime.Object) bool {
	c, ok := o.(*resourcev1.ResourceClaim)
	return ok && c.Status.Allocation == nil
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
