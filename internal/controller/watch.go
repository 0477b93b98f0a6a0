package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/source"
)

// changes is what the informers saw change since the loop last looked: the keys of
// the objects to read again from the cache, and the groups to translate again because
// their owner was read. It is the only state the informer handlers, the owner readers
// and the loop share.
type changes struct {
	mu         sync.Mutex
	nodes      map[string]bool
	pods       map[string]bool
	groups     map[source.Ref]bool
	queues     map[string]bool
	namespaces map[string]bool
	specs      map[string]bool
	// objects are the namespaces and volume objects placement's filters read.
	objects map[objectRef]bool
	wake    chan struct{}
}

// objectRef names one object of a kind placement's filters read.
type objectRef struct {
	kind            string
	namespace, name string
}

func newChanges() *changes {
	c := &changes{wake: make(chan struct{}, 1)}
	c.reset()
	return c
}

func (c *changes) reset() {
	c.nodes, c.pods, c.groups, c.queues = map[string]bool{}, map[string]bool{}, map[source.Ref]bool{}, map[string]bool{}
	c.namespaces, c.specs, c.objects = map[string]bool{}, map[string]bool{}, map[objectRef]bool{}
}

// markSpecs marks groups to translate again and wakes the loop.
func (c *changes) markSpecs(keys []string) {
	c.mark(func() {
		for _, k := range keys {
			c.specs[k] = true
		}
	})
}

// mark records a change with f and wakes the loop.
func (c *changes) mark(f func()) {
	c.mu.Lock()
	f()
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take returns the changes so far and starts a new batch.
func (c *changes) take() *changes {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &changes{nodes: c.nodes, pods: c.pods, groups: c.groups, queues: c.queues, namespaces: c.namespaces,
		specs: c.specs, objects: c.objects}
	c.reset()
	return out
}

func (c *changes) empty() bool {
	return len(c.nodes)+len(c.pods)+len(c.groups)+len(c.queues)+len(c.namespaces)+len(c.specs)+len(c.objects) == 0
}

// handler returns informer handlers that mark the key of every changed object.
func (c *changes) handler(mark func(set *changes, obj client.Object)) toolscache.ResourceEventHandler {
	on := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(client.Object); ok {
			c.mark(func() { mark(c, o) })
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, obj any) { on(obj) },
		DeleteFunc: on,
	}
}

// filterObjects are the kinds besides nodes and pods that kube-scheduler's filters read,
// hosted in placement: namespaces (pod affinity's namespaceSelector) and the volume
// objects. The mirror gives them to the engine (SetObject).
var filterObjects = []client.Object{
	&corev1.Namespace{}, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{},
	&storagev1.StorageClass{}, &storagev1.CSINode{}, &storagev1.CSIDriver{},
}

// servedAPIs returns the group APIs the cluster serves, logging one line for each it
// skips, and whether it serves Queues.
func (s *scheduler) servedAPIs() (apis []source.GroupAPI, queues bool) {
	served := func(gvr schema.GroupVersionResource) bool {
		list, err := s.kube.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			return false
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				return true
			}
		}
		return false
	}
	for _, api := range source.GroupAPIs() {
		if served(api.Resource) {
			apis = append(apis, api)
			continue
		}
		s.log.Info("skipping a PodGroup API the cluster does not serve", "api", api.Resource.GroupVersion().String(), "source", api.Source)
	}
	s.dra = served(resourcev1.SchemeGroupVersion.WithResource("resourceclaims"))
	if !s.dra {
		s.log.Info("the cluster does not serve DRA's resource.k8s.io/v1; pods with ResourceClaims wait", "api", resourcev1.SchemeGroupVersion.String())
	}
	s.taintRules = s.dra && served(resourcev1.SchemeGroupVersion.WithResource("devicetaintrules"))
	if s.dra && !s.taintRules {
		s.log.Info("the cluster does not serve DeviceTaintRules; only the taints ResourceSlices carry are honoured", "api", resourcev1.SchemeGroupVersion.String())
	}
	queues = served(musterv1alpha1.GroupVersion.WithResource("queues"))
	if !queues {
		s.log.Info("the cluster does not serve muster's Queue API; every group uses the unlimited default queue",
			"api", musterv1alpha1.GroupVersion.String())
	}
	return apis, queues
}

// watch registers the informer handlers and waits for the caches to sync.
func (s *scheduler) watch(ctx context.Context) error {
	apis, queues := s.servedAPIs()
	type watched struct {
		obj  client.Object
		mark func(*changes, client.Object)
	}
	list := []watched{
		{&corev1.Node{}, func(c *changes, o client.Object) { c.nodes[o.GetName()] = true }},
		{&corev1.Pod{}, func(c *changes, o client.Object) { c.pods[o.GetNamespace()+"/"+o.GetName()] = true }},
		{&schedulingv1.PriorityClass{}, func(*changes, client.Object) {}},
	}
	for _, api := range apis {
		s.mirror.notes.apis[api.Source] = true
		src := api.Source
		list = append(list, watched{api.New(), func(c *changes, o client.Object) {
			c.groups[source.Ref{Source: src, Namespace: o.GetNamespace(), Name: o.GetName()}] = true
		}})
	}
	objs := filterObjects
	if s.dra {
		objs = append(slices.Clip(objs), draObjects...)
	}
	if s.taintRules {
		objs = append(slices.Clip(objs), taintRules...)
	}
	for _, obj := range objs {
		kind := fmt.Sprintf("%T", obj)
		list = append(list, watched{obj, func(c *changes, o client.Object) {
			c.objects[objectRef{kind: kind, namespace: o.GetNamespace(), name: o.GetName()}] = true
		}})
	}
	if queues {
		// Namespaces are watched for their labels, which Queues' namespaceSelectors match
		// (and pod affinity's namespaceSelectors, as filterObjects).
		list = append(list,
			watched{&musterv1alpha1.Queue{}, func(c *changes, o client.Object) { c.queues[o.GetName()] = true }},
			watched{&corev1.Namespace{}, func(c *changes, o client.Object) { c.namespaces[o.GetName()] = true }})
	}
	s.queues.served = queues
	for _, w := range list {
		inf, err := s.cache.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
		if _, err := inf.AddEventHandler(s.changes.handler(w.mark)); err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
	}
	if !s.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("waiting for the caches to sync: %w", ctx.Err())
	}
	return nil
}
