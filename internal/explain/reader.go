package explain

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
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
	// Resource resolves the resource of kind gk through discovery, at the first of
	// versions the cluster serves (at its preferred version when none is given). A kind
	// the cluster does not serve is an error for which meta.IsNoMatchError holds.
	Resource(gk schema.GroupKind, versions ...string) (schema.GroupVersionResource, error)
}

var _ Reader = Clients{}

// NewClients returns the Clients of kube and dyn, with a RESTMapper over kube's
// discovery that reads it once, when first asked, and again when asked for a kind it
// did not list.
func NewClients(kube kubernetes.Interface, dyn dynamic.Interface) Clients {
	return Clients{Kube: kube, Dynamic: dyn, Mapper: discoveryMapper(kube)}
}

func discoveryMapper(kube kubernetes.Interface) meta.RESTMapper {
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
}

// Resource resolves gk through c.Mapper, or, when it is nil, through a RESTMapper
// over the API server's discovery made for the call.
func (c Clients) Resource(gk schema.GroupKind, versions ...string) (schema.GroupVersionResource, error) {
	m := c.Mapper
	if m == nil {
		m = discoveryMapper(c.Kube)
	}
	return resourceOf(m, gk, versions...)
}

// resourceOf resolves gk with m.
func resourceOf(m meta.RESTMapper, gk schema.GroupKind, versions ...string) (schema.GroupVersionResource, error) {
	mapping, err := m.RESTMapping(gk, versions...)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("resolving the resource of kind %s: %w", gk, err)
	}
	return mapping.Resource, nil
}

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
