package explain

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Reader is what Gather reads the cluster through: the API server (Clients), or a
// cache of it (the dashboard reads muster's informers, so that a viewer adds no load
// to the API server).
type Reader interface {
	// Pods lists the pods of namespace, or of every namespace for "".
	Pods(ctx context.Context, namespace string) ([]corev1.Pod, error)
	// Nodes lists the nodes.
	Nodes(ctx context.Context) ([]corev1.Node, error)
	// Events lists the Events of namespace.
	Events(ctx context.Context, namespace string) ([]corev1.Event, error)
	// Object reads one object of the resource gvr; namespace is "" for a cluster-scoped
	// one. A missing object is an error for which apierrors.IsNotFound holds.
	Object(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
}

var _ Reader = Clients{}

// Pods lists the pods of namespace from the API server.
func (c Clients) Pods(ctx context.Context, namespace string) ([]corev1.Pod, error) {
	l, err := c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Nodes lists the nodes from the API server.
func (c Clients) Nodes(ctx context.Context) ([]corev1.Node, error) {
	l, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Events lists the Events of namespace from the API server.
func (c Clients) Events(ctx context.Context, namespace string) ([]corev1.Event, error) {
	l, err := c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Object reads one object from the API server.
func (c Clients) Object(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	if namespace == "" {
		return c.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	}
	return c.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}
