package explain

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
)

// CacheReader is explain's Reader over muster's informer cache, so that the dashboard's
// group page and the visibility API walk the same steps as `muster explain` without a
// request to the API server. It
// reads the group objects and Queues muster watches; any other resource (a workload
// such as a PyTorchJob) is not found, and Events are not read (muster does not watch
// them, so the walk's "after placement" step sees pod status only).
type CacheReader struct{ r client.Reader }

// NewCacheReader returns a Reader over r, a cache of muster's informers.
func NewCacheReader(r client.Reader) CacheReader { return CacheReader{r: r} }

var _ Reader = CacheReader{}

// cached are the resources the cache holds, with their typed objects.
var cached = map[schema.GroupVersionResource]func() client.Object{
	spv1alpha1.GroupVersion.WithResource("podgroups"):              func() client.Object { return &spv1alpha1.PodGroup{} },
	volcanov1beta1.GroupVersion.WithResource("podgroups"):          func() client.Object { return &volcanov1beta1.PodGroup{} },
	schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups"): func() client.Object { return &schedulingv1beta1.PodGroup{} },
	musterv1alpha1.GroupVersion.WithResource("queues"):             func() client.Object { return &musterv1alpha1.Queue{} },
}

// kinds are the kinds of the cached resources.
var kinds = map[schema.GroupVersionResource]string{
	spv1alpha1.GroupVersion.WithResource("podgroups"):              "PodGroup",
	volcanov1beta1.GroupVersion.WithResource("podgroups"):          "PodGroup",
	schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups"): "PodGroup",
	musterv1alpha1.GroupVersion.WithResource("queues"):             "Queue",
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
	newObject, ok := cached[gvr]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	obj := newObject()
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
	u.SetKind(kinds[gvr])
	return u, nil
}

// Unserved reports whether err, from a cache or a client, says the cluster does not
// serve the type asked for.
func Unserved(err error) bool {
	var discovery *apiutil.ErrResourceDiscoveryFailed
	return meta.IsNoMatchError(err) || errors.As(err, &discovery)
}
