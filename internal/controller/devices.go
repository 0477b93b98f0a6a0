package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/kubefit"
)

// draObjects are the DRA kinds placement's DynamicResources plugin reads, watched when
// the cluster serves resource.k8s.io/v1 (see servesDRA).
var draObjects = []client.Object{
	&resourcev1.ResourceClaim{}, &resourcev1.ResourceSlice{}, &resourcev1.DeviceClass{},
}

// taintRules are DeviceTaintRules, whose taints the DynamicResources plugin honours as
// kube-scheduler v1.37's does: watched when the cluster serves them (GA in 1.37; a
// cluster before it may not), with DRA.
var taintRules = []client.Object{&resourcev1.DeviceTaintRule{}}

// claimTries bounds the writes of one claim: members sharing a claim write it in turn,
// and a conflict is a write the cache has not shown yet, read again from the API server.
const claimTries = 3

// allocateClaims writes p's DRA claims as its plan step says, before p is bound, as
// kube-scheduler's DynamicResources does in PreBind: the finalizer that protects an
// allocated claim, then the allocation (for a claim that has none) and p's reservation.
// A claim allocated meanwhile to other devices (by another scheduler, or another
// member's step) is a conflict, and p is not bound.
func (b *binder) allocateClaims(ctx context.Context, p *corev1.Pod, claims []kubefit.ClaimAllocation) error {
	for _, ca := range claims {
		fail := func(err error) error {
			return fmt.Errorf("allocating claim %s/%s of %s: %w", p.Namespace, ca.Name, p.Name, err)
		}
		if ca.Extended != nil {
			if err := b.allocateExtended(ctx, p, ca); err != nil {
				return fail(err)
			}
			continue
		}
		claim := &resourcev1.ResourceClaim{}
		if err := b.cache.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: ca.Name}, claim); err != nil {
			return fail(err)
		}
		for try := 1; ; try++ {
			err := b.writeClaim(ctx, claim, p, ca)
			if err == nil {
				break
			}
			if !apierrors.IsConflict(err) || try == claimTries {
				return fail(err)
			}
			if claim, err = b.kube.ResourceV1().ResourceClaims(p.Namespace).Get(ctx, ca.Name, metav1.GetOptions{}); err != nil {
				return fail(err)
			}
		}
	}
	return nil
}

// allocateExtended writes p's claim for its extended resources backed by DRA, as
// kube-scheduler's DynamicResources does in PreBind: it creates the claim (controlled
// by p, so that it goes with p), writes its allocation reserved for p, and tells the
// kubelet which of the claim's requests serve which container's resource
// (status.extendedResourceClaimStatus). A claim of that name left by an earlier attempt
// at p is taken when it is p's with the same requests, and allocated the same devices
// or none.
func (b *binder) allocateExtended(ctx context.Context, p *corev1.Pod, ca kubefit.ClaimAllocation) error {
	claims := b.kube.ResourceV1().ResourceClaims(p.Namespace)
	want := kubefit.ExtendedClaimObject(p, ca)
	claim, err := claims.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		if claim, err = claims.Get(ctx, ca.Name, metav1.GetOptions{}); err == nil {
			have := claim.Status.Allocation
			switch {
			case !kubefit.IsExtendedClaimOf(claim, p) || !apiequality.Semantic.DeepEqual(claim.Spec, want.Spec):
				err = fmt.Errorf("a claim of that name exists that is not this member's with these requests")
			case have != nil && !apiequality.Semantic.DeepEqual(have.Devices, ca.Allocation.Devices):
				err = fmt.Errorf("the claim was allocated other devices meanwhile")
			}
		}
	}
	if err != nil {
		return err
	}
	claim.Status = kubefit.ExtendedReservation(p, ca)
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"extendedResourceClaimStatus": kubefit.ExtendedStatus(ca)}})
	if err != nil {
		return err
	}
	_, err = b.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// writeClaim brings claim to what ca's step leaves it as (kubefit.Allocated).
func (b *binder) writeClaim(ctx context.Context, claim *resourcev1.ResourceClaim, p *corev1.Pod, ca kubefit.ClaimAllocation) error {
	if claim.UID != ca.UID {
		return fmt.Errorf("the claim was replaced (uid %s, planned for %s)", claim.UID, ca.UID)
	}
	if have := claim.Status.Allocation; have != nil && ca.Allocation != nil && !apiequality.Semantic.DeepEqual(have.Devices, ca.Allocation.Devices) {
		return fmt.Errorf("the claim was allocated other devices meanwhile")
	}
	want, err := kubefit.Allocated(claim, p, ca)
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(want.Status, claim.Status) {
		return nil
	}
	claims := b.kube.ResourceV1().ResourceClaims(claim.Namespace)
	if !slices.Contains(claim.Finalizers, resourcev1.Finalizer) {
		protected := claim.DeepCopy()
		protected.Finalizers = append(protected.Finalizers, resourcev1.Finalizer)
		updated, err := claims.Update(ctx, protected, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		want.ObjectMeta = updated.ObjectMeta
	}
	_, err = claims.UpdateStatus(ctx, want, metav1.UpdateOptions{})
	return err
}

// releaseClaims undoes p's claim writes when p is not bound after all: p's reservation
// is removed from each of its claims, and a claim left reserved for nobody is
// deallocated, as the resourceclaim controller deallocates a claim whose last consumer
// is gone; p's claim for its extended resources backed by DRA is deleted, as
// kube-scheduler's Unreserve deletes it. p is muster's and unbound, and its claims are
// in its own namespace.
func (k *kit) releaseClaims(ctx context.Context, p *corev1.Pod) {
	if err := k.deleteExtended(ctx, p); err != nil && !apierrors.IsNotFound(err) {
		k.log.Error(err, "deleting the extended resources' claim of a member not bound", "pod", p.Namespace+"/"+p.Name)
	}
	for i := range p.Spec.ResourceClaims {
		name, _, err := resourceclaim.Name(p, &p.Spec.ResourceClaims[i])
		if err != nil || name == nil {
			continue
		}
		for try := 1; ; try++ {
			err := k.release(ctx, p.Namespace, *name, p.UID)
			if err == nil || apierrors.IsNotFound(err) {
				break
			}
			if !apierrors.IsConflict(err) || try == claimTries {
				k.log.Error(err, "releasing a claim of a member not bound", "claim", p.Namespace+"/"+*name, "pod", p.Name)
				break
			}
		}
	}
}

// deleteExtended deletes p's claim for its extended resources backed by DRA, if there
// is one and it is p's, without its finalizer.
func (k *kit) deleteExtended(ctx context.Context, p *corev1.Pod) error {
	claims := k.kube.ResourceV1().ResourceClaims(p.Namespace)
	claim, err := claims.Get(ctx, kubefit.ExtendedClaimName(p), metav1.GetOptions{})
	if err != nil || !kubefit.IsExtendedClaimOf(claim, p) {
		return err
	}
	if f := slices.Index(claim.Finalizers, resourcev1.Finalizer); f >= 0 {
		claim.Finalizers = slices.Delete(claim.Finalizers, f, f+1)
		if _, err := claims.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return claims.Delete(ctx, claim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID}})
}

// release removes consumer uid's reservation from the claim namespace/name, read from
// the API server, and deallocates it when no reservation is left.
func (k *kit) release(ctx context.Context, namespace, name string, uid types.UID) error {
	claims := k.kube.ResourceV1().ResourceClaims(namespace)
	claim, err := claims.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	i := slices.IndexFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == uid })
	if i < 0 {
		return nil
	}
	claim.Status.ReservedFor = slices.Delete(claim.Status.ReservedFor, i, i+1)
	if len(claim.Status.ReservedFor) == 0 {
		claim.Status.Allocation = nil
	}
	claim, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if f := slices.Index(claim.Finalizers, resourcev1.Finalizer); f >= 0 && claim.Status.Allocation == nil {
		claim.Finalizers = slices.Delete(claim.Finalizers, f, f+1)
		if _, err := claims.Update(ctx, claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// releaseOrphanReservations releases the claims of muster's unbound pods that are
// reserved for them, or made for their extended resources: writes of a plan whose binds
// a stopped muster never made (the plan is recorded only on bound members, and none
// was). Such pods hold devices without running; placed again, they are allocated anew.
func (r *recovery) releaseOrphanReservations(ctx context.Context) error {
	var claims resourcev1.ResourceClaimList
	if err := r.cache.List(ctx, &claims); err != nil {
		return fmt.Errorf("listing resource claims: %w", err)
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		refs := claim.Status.ReservedFor
		if owner := metav1.GetControllerOf(claim); owner != nil && owner.Kind == "Pod" && owner.APIVersion == "v1" &&
			claim.Annotations[resourcev1.ExtendedResourceClaimAnnotation] == "true" {
			refs = append(slices.Clip(refs), resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: owner.Name, UID: owner.UID})
		}
		for _, ref := range refs {
			if ref.Resource != "pods" || ref.APIGroup != "" {
				continue
			}
			p := &corev1.Pod{}
			if err := r.cache.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: ref.Name}, p); err != nil ||
				p.UID != ref.UID || p.Spec.NodeName != "" || !r.cfg.Schedules(p.Spec.SchedulerName) {
				continue
			}
			r.log.Info("releasing a claim reserved for a member muster did not bind", "claim", claim.Namespace+"/"+claim.Name, "pod", p.Name)
			r.releaseClaims(ctx, p)
		}
	}
	return nil
}
