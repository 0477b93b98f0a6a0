package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownerTTL is how long an owner read from the API server is used before it is read
// again: the replicas a job declares rarely change, and a group is translated on every
// change of its pods.
const ownerTTL = 30 * time.Second

// ownerKinds are the controllers whose declared replicas muster reads (see
// source.OwnerRoles); deploy/rbac grants get on exactly these. Other owners (a
// ReplicaSet, an unknown operator's kind) are not read.
var ownerKinds = map[schema.GroupKind]bool{
	{Group: "batch", Kind: "Job"}:               true,
	{Group: "jobset.x-k8s.io", Kind: "JobSet"}:  true,
	{Group: "kubeflow.org", Kind: "PyTorchJob"}: true,
	{Group: "kubeflow.org", Kind: "TFJob"}:      true,
	{Group: "kubeflow.org", Kind: "MPIJob"}:     true,
	{Group: "kubeflow.org", Kind: "XGBoostJob"}: true,
	{Group: "kubeflow.org", Kind: "PaddleJob"}:  true,
	{Group: "kubeflow.org", Kind: "JAXJob"}:     true,
}

// ownerEntry is an owner as read at a time; obj is nil when it could not be read.
type ownerEntry struct {
	obj *unstructured.Unstructured
	at  time.Time
}

// ownerOf returns the workload controller behind a group: the controller owner of its
// first pod that has one, else of its group object; a Job that a JobSet owns stands
// for its JobSet. It returns nil when there is none, or it cannot be read.
func (s *scheduler) ownerOf(ctx context.Context, pods []*corev1.Pod, obj client.Object) *unstructured.Unstructured {
	var ref *metav1.OwnerReference
	ns := ""
	for _, p := range pods {
		if ref = metav1.GetControllerOf(p); ref != nil {
			ns = p.Namespace
			break
		}
	}
	if ref == nil && obj != nil {
		ref, ns = metav1.GetControllerOf(obj), obj.GetNamespace()
	}
	if ref == nil {
		return nil
	}
	owner := s.getOwner(ctx, ns, *ref)
	if owner != nil && owner.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "batch", Kind: "Job"}) {
		if up := metav1.GetControllerOf(owner); up != nil && up.Kind == "JobSet" {
			if js := s.getOwner(ctx, ns, *up); js != nil {
				return js
			}
		}
	}
	return owner
}

// getOwner reads the object ref names in ns, through the cache of owners.
func (s *scheduler) getOwner(ctx context.Context, ns string, ref metav1.OwnerReference) *unstructured.Unstructured {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || !ownerKinds[gv.WithKind(ref.Kind).GroupKind()] {
		return nil
	}
	key := types.NamespacedName{Namespace: ns, Name: string(ref.UID)}
	now := s.clock.Now()
	if e, ok := s.owners[key]; ok && now.Sub(e.at) < ownerTTL {
		return e.obj
	}
	obj, err := s.readOwner(ctx, ns, gv, ref)
	if err != nil {
		s.log.V(1).Info("cannot read a group's owner; diagnoses will not name its replicas", "owner", ref.Kind+" "+ns+"/"+ref.Name, "error", err.Error())
	}
	s.pruneOwners(now)
	s.owners[key] = ownerEntry{obj: obj, at: now}
	return obj
}

// readOwner GETs the owner ref names, checking that it is the object the reference
// was made for.
func (s *scheduler) readOwner(ctx context.Context, ns string, gv schema.GroupVersion, ref metav1.OwnerReference) (*unstructured.Unstructured, error) {
	mapping, err := s.mgr.GetRESTMapper().RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, err
	}
	obj, err := s.dyn.Resource(mapping.Resource).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if obj.GetUID() != ref.UID {
		return nil, fmt.Errorf("%s %s/%s: expected uid %s, found %s", ref.Kind, ns, ref.Name, ref.UID, obj.GetUID())
	}
	return obj, nil
}

// pruneOwners drops expired entries once the cache has grown.
func (s *scheduler) pruneOwners(now time.Time) {
	const prune = 256
	if len(s.owners) < prune {
		return
	}
	for k, e := range s.owners {
		if now.Sub(e.at) >= ownerTTL {
			delete(s.owners, k)
		}
	}
}
