package kubelet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// ReasonFailedMount is the reason of the Warning event the kubelet records on a pod
// whose volumes it cannot mount yet, as a real kubelet does.
const ReasonFailedMount = "FailedMount"

// pvcProtectionFinalizer is the finalizer the API server puts on every claim; a claim
// being deleted without it is not started with, as the kubelet does.
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// claimIndex indexes pods by the claims (namespace/name) their volumes use.
const claimIndex = "claim"

// podClaims are the claims pod's volumes use: persistentVolumeClaim volumes and the
// claims of generic ephemeral volumes (<pod>-<volume>), by volume name.
func podClaims(pod *v1.Pod) []podClaim {
	var out []podClaim
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.PersistentVolumeClaim != nil:
			out = append(out, podClaim{volume: vol.Name, claim: vol.PersistentVolumeClaim.ClaimName})
		case vol.Ephemeral != nil:
			out = append(out, podClaim{volume: vol.Name, claim: pod.Name + "-" + vol.Name, ephemeral: true})
		}
	}
	return out
}

// podClaim is one claim-backed volume of a pod.
type podClaim struct {
	volume, claim string
	ephemeral     bool
}

// claimKeys indexes a pod by its claims.
func claimKeys(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, c := range podClaims(pod) {
		keys = append(keys, pod.Namespace+"/"+c.claim)
	}
	return keys, nil
}

// unmountable returns why the kubelet cannot mount pod's claim-backed volumes on node
// yet, in the words of the kubelet's FailedMount event, or "" if it can: every claim
// must exist, not be being deleted unprotected, be Bound, and be bound to a volume
// bound back to it whose node affinity admits node. The claim of an ephemeral volume
// must be the pod's own (the pod its controller).
func (k *Kubelet) unmountable(pod *v1.Pod, node *v1.Node) string {
	var failed, errs []string
	for _, c := range podClaims(pod) {
		if err := k.claimMountable(pod, c, node); err != nil {
			failed = append(failed, c.volume)
			errs = append(errs, fmt.Sprintf("error processing PVC %s/%s: %v", pod.Namespace, c.claim, err))
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=[%s], unattached volumes=[], failed to process volumes=[%s]: %s",
		strings.Join(failed, " "), strings.Join(failed, " "), strings.Join(errs, "; "))
}

// claimMountable checks one claim of pod, as the kubelet's volume manager does (see
// unmountable).
func (k *Kubelet) claimMountable(pod *v1.Pod, c podClaim, node *v1.Node) error {
	claim, err := k.claims.PersistentVolumeClaims(pod.Namespace).Get(c.claim)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to fetch PVC from API server: %w", err)
	} else if err != nil {
		return err
	}
	if c.ephemeral && !metav1.IsControlledBy(claim, pod) {
		return fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	if claim.DeletionTimestamp != nil && !slices.Contains(claim.Finalizers, pvcProtectionFinalizer) {
		return errors.New("PVC is being deleted")
	}
	if claim.Status.Phase != v1.ClaimBound {
		return errors.New("PVC is not bound")
	}
	if claim.Spec.VolumeName == "" {
		return errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	pv, err := k.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to fetch PV %s from API server: %w", claim.Spec.VolumeName, err)
	} else if err != nil {
		return err
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != claim.Namespace || ref.Name != claim.Name || ref.UID != claim.UID {
		return fmt.Errorf("PV %s is not bound to claim %s/%s (claimRef %s)", pv.Name, claim.Namespace, claim.Name, describeRef(ref))
	}
	if err := volumehelpers.CheckNodeAffinity(pv, node.Labels); err != nil {
		return fmt.Errorf("PV %s has node affinity that excludes node %s: %w", pv.Name, node.Name, err)
	}
	return nil
}

// describeRef names a claim reference for a message.
func describeRef(ref *v1.ObjectReference) string {
	if ref == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s uid %s", ref.Namespace, ref.Name, ref.UID)
}

// warnUnmountable records msg as a FailedMount event on pod, once per distinct message
// in a row, as the kubelet's retries would (its event correlator folds repeats).
func (k *Kubelet) warnUnmountable(pod *v1.Pod, msg string) {
	k.mu.Lock()
	a := k.admitted[pod.UID]
	repeat := a == nil || a.mountError == msg
	if a != nil {
		a.mountError = msg
	}
	k.mu.Unlock()
	if !repeat {
		k.recorder.Event(pod, v1.EventTypeWarning, ReasonFailedMount, msg)
	}
}

// mounted records that pod's volumes were mounted at now, unless they were before,
// and returns its admission a with the time they were.
func (k *Kubelet) mounted(pod *v1.Pod, a admission, now time.Time) admission {
	k.mu.Lock()
	defer k.mu.Unlock()
	cur, ok := k.admitted[pod.UID]
	if !ok {
		a.mountedAt = now
		return a
	}
	if cur.mountedAt.IsZero() {
		cur.mountedAt = now
		cur.mountError = ""
	}
	return *cur
}

// watchVolumes sets up the claim and volume informers and indexes pods by claim, so
// that a pod waiting for its volumes is synced when a claim or volume of it changes.
func (k *Kubelet) watchVolumes(podInformer cache.SharedIndexInformer) error {
	if err := podInformer.AddIndexers(cache.Indexers{claimIndex: claimKeys}); err != nil {
		return fmt.Errorf("indexing pods by claim: %w", err)
	}
	claimInformer := k.factory.Core().V1().PersistentVolumeClaims()
	volumeInformer := k.factory.Core().V1().PersistentVolumes()
	k.claims = claimInformer.Lister()
	k.volumes = volumeInformer.Lister()
	k.synced = append(k.synced, claimInformer.Informer().HasSynced, volumeInformer.Informer().HasSynced)
	claimChanged := func(obj any) {
		if c, ok := obj.(*v1.PersistentVolumeClaim); ok {
			k.enqueueClaimPods(c.Namespace + "/" + c.Name)
		}
	}
	volumeChanged := func(obj any) {
		if pv, ok := obj.(*v1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
			k.enqueueClaimPods(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
		}
	}
	if _, err := claimInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: claimChanged, UpdateFunc: func(_, obj any) { claimChanged(obj) },
	}); err != nil {
		return fmt.Errorf("watching claims: %w", err)
	}
	if _, err := volumeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: volumeChanged, UpdateFunc: func(_, obj any) { volumeChanged(obj) },
	}); err != nil {
		return fmt.Errorf("watching volumes: %w", err)
	}
	return nil
}

// enqueueClaimPods queues the pods that use the claim with key namespace/name.
func (k *Kubelet) enqueueClaimPods(key string) {
	pods, err := k.podIndex.ByIndex(claimIndex, key)
	if err != nil {
		return
	}
	for _, obj := range pods {
		k.enqueuePod(obj)
	}
}
