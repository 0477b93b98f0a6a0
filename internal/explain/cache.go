package explain

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/source"
)

// CacheReader is explain's Reader over muster's informer cache, so that the dashboard's
// group page and the visibility API walk the same steps as `muster explain` without a
// request to the API server. It
// reads the group objects and Queues muster watches; any other resource (a workload
// such as a PyTorchJob) is not found, and Events are not read (muster does not watch
// them, so the walk's "after placement" step sees pod status only). Kinds are resolved
// with the RESTMapper it is given, the controller-runtime manager's.
type CacheReader struct {
	r      client.Reader
	mapper meta.RESTMapper
}

// NewCacheReader returns a Reader over r, a cache of muster's informers, resolving
// kinds with mapper (nil: every kind is unresolved, with an error saying so).
func NewCacheReader(r client.Reader, mapper meta.RESTMapper) CacheReader {
	return CacheReader{r: r, mapper: mapper}
}

var _ Reader = CacheReader{}

// cachedObject returns an empty object of gvr and its kind, for a resource the cache
// holds: the registry's group APIs and Queues.
func cachedObject(gvr schema.GroupVersionResource) (obj client.Object, kind string, ok bool) {
	if gvr == queueGVR {
		return &musterv1alpha1.Queue{}, "Queue", true
	}
	if api := apiServedAs(gvr); api != nil {
		return api.New(), api.Kind, true
	}
	return nil, "", false
}

// apiServedAs returns the group API served as gvr, or nil.
func apiServedAs(gvr schema.GroupVersionResource) *source.GroupAPI {
	for _, api := range source.GroupAPIs() {
		if api.Resource == gvr {
			return &api
		}
	}
	return nil
}

// Resource resolves gk with the RESTMapper the reader was given.
func (c CacheReader) Resource(gk schema.GroupKind, versions ...string) (schema.GroupVersionResource, error) {
	if c.mapper == nil {
		return schema.GroupVersionResource{}, fmt.Errorf("resolving the resource of kind %s: the cache reader was given no RESTMapper", gk)
	}
	return resourceOf(c.mapper, gk, versions...)
}

// Pods lists the cached pods of namespace ("" for all).
func (c CacheReader) Pods(ctx context.Context, namespace string) ([]corev1.Pod, error) {
	var l corev1.PodList
	if err := c.r.List(ctx, &l, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing cached pods: %w", err)
	}
	return l.Items, nil
}

// Nodes lists the cached nodes.
func (c CacheReader) Nodes(ctx context.Context) ([]corev1.Node, error) {
	var l corev1.NodeList
	if err := c.r.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing cached nodes: %w", err)
	}
	return l.Items, nil
}

// Events returns none: muster's informers do not watch Events.
func (c CacheReader) Events(context.Context, string) ([]corev1.Event, error) { return nil, nil }

// Object reads one cached object as unstructured.
func (c CacheReader) Object(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	obj, kind, ok := cachedObject(gvr)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	if err := c.r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		if Unserved(err) {
			return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
		}
		return nil, err
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s/%s: %w", gvr.Resource, namespace, name, err)
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	return u, nil
}

// Unserved reports whether err, from a cache or a client, says the cluster does not
// serve the type asked for.
func Unserved(err error) bool {
	var discovery *apiutil.ErrResourceDiscoveryFailed
	return meta.IsNoMatchError(err) || errors.As(err, &discovery)
}
