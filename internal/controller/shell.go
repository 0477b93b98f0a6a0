package controller

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/metrics"
	"github.com/muster-sched/muster/internal/source"
)

// kit is what every owner of the shell uses and none owns: the configuration, the
// clock, the clients, the cache the informers fill, the Event recorder and the
// metrics. It holds no state of its own.
type kit struct {
	cfg      *musterv1alpha1.Configuration
	clock    clock.WithTicker
	log      logr.Logger
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	cache    cache.Cache
	recorder events.EventRecorder
	metrics  *metrics.Metrics
}

// maxNote is the longest Event note the events API accepts.
const maxNote = 1024

// event records an Event on obj, its note cut to what the events API accepts.
func (k *kit) event(obj runtime.Object, typ, reason, message string) {
	if len(message) > maxNote {
		message = message[:maxNote-3] + "..."
	}
	k.recorder.Eventf(obj, nil, typ, reason, "Scheduling", "%s", message)
}

// podKey returns namespace/name.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// splitKey splits namespace/name.
func splitKey(key string) types.NamespacedName {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return types.NamespacedName{Namespace: key[:i], Name: key[i+1:]}
		}
	}
	return types.NamespacedName{Name: key}
}

// refOfKey parses a group key SOURCE/namespace/name.
func refOfKey(key string) source.Ref {
	src := splitKey(key)
	nn := splitKey(src.Name)
	return source.Ref{Source: engine.Source(src.Namespace), Namespace: nn.Namespace, Name: nn.Name}
}

// groupName renders a group key for people: namespace/name.
func groupName(key string) string {
	ref := refOfKey(key)
	return ref.Namespace + "/" + ref.Name
}

// sortedKeys returns a map's keys, sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// addKeys adds the keys of m to set.
func addKeys[V any](set map[string]struct{}, m map[string]V) {
	for k := range m {
		set[k] = struct{}{}
	}
}

// retried takes the next key of queue and hands it to do, which reports whether it
// must be done again: the key is then queued again, after the queue's rate limiter's
// delay, and otherwise its failures are forgotten. It reports false once queue is shut
// down (a worker loop for drain).
func retried[K comparable](queue workqueue.TypedRateLimitingInterface[K], do func(key K) (again bool)) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	if do(key) {
		queue.AddRateLimited(key)
	} else {
		queue.Forget(key)
	}
	return true
}

// taken removes key's value from m and returns it, with mu, which guards m, held: a
// worker takes the work the loop left for it.
func taken[K comparable, V any](mu *sync.Mutex, m map[K]V, key K) (V, bool) {
	mu.Lock()
	defer mu.Unlock()
	v, ok := m[key]
	delete(m, key)
	return v, ok
}

// putBack gives key's value v back to m, with mu held, for a worker to take again, unless
// the loop left newer work under key meanwhile.
func putBack[K comparable, V any](mu *sync.Mutex, m map[K]V, key K, v V) {
	mu.Lock()
	defer mu.Unlock()
	if _, newer := m[key]; !newer {
		m[key] = v
	}
}

// drain runs n workers, each taking work with next until it reports the queue shut
// down, and shuts queue down once ctx is done; it returns when every worker has ended.
func drain(ctx context.Context, n int, queue interface{ ShutDown() }, next func(context.Context) bool) {
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for next(ctx) {
			}
		})
	}
	wg.Wait()
}
