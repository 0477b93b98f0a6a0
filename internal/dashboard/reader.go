package dashboard

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/explain"
)

// cacheReader is explain's Reader over the dashboard's cache, so that the group page
// walks the same steps as `muster explain` without a request to the API server. It
// reads the group objects and Queues muster watches; any other resource (a workload
// such as a PyTorchJob) is not found, and Events are not read (muster does not watch
// them, so the walk's "after placement" step sees pod status only).
type cacheReader struct{ r client.Reader }

var _ explain.Reader = cacheReader{}

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
func (c cacheReader) Pods(ctx context.Context, namespace string) ([]corev1.Pod, error) {
	var l corev1.PodList
	if err := c.r.List(ctx, &l, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing cached pods: %w", err)
	}
	return l.Items, nil
}

// Nodes lists the cached nodes.
func (c cacheReader) Nodes(ctx context.Context) ([]corev1.Node, error) {
	var l corev1.NodeList
	if err := c.r.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing cached nodes: %w", err)
	}
	return l.Items, nil
}

// Events returns none: muster's informers do not watch Events.
func (c cacheReader) Events(context.Context, string) ([]corev1.Event, error) { return nil, nil }

// Object reads one cached object as unstructured.
func (c cacheReader) Object(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	newObject, ok := cached[gvr]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	obj := newObject()
	if err := c.r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		if unserved(err) {
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
