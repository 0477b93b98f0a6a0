package sandbox

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// Annotations of the PV controller's protocol with external provisioners.
const (
	annDynamicallyProvisioned = volumehelpers.AnnDynamicallyProvisioned
	annStorageProvisioner     = volumehelpers.AnnStorageProvisioner
	annBetaStorageProvisioner = volumehelpers.AnnBetaStorageProvisioner
	annSelectedNode           = volumehelpers.AnnSelectedNode
)

// everything selects every object of a lister.
var everything = labels.Everything()

// syncClaim provisions the volume of the claim named key if the PV controller has
// handed it to StorageDriver and it has none yet (see provisioner).
func (p *provisioner) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("claim key %q: %w", key, err)
	}
	claim, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil || provisionerOf(claim) != StorageDriver {
		return nil
	}
	className := volumehelpers.GetPersistentVolumeClaimClass(claim)
	class, err := p.classes.Get(className)
	if apierrors.IsNotFound(err) {
		p.recorder.Eventf(claim, v1.EventTypeWarning, reasonProvisioningFailed, "storageclass.storage.k8s.io %q not found", className)
		return nil
	} else if err != nil {
		return err
	}
	if class.Provisioner != StorageDriver {
		return nil
	}
	if _, selected := claim.Annotations[annSelectedNode]; !selected && waitsForConsumer(class) {
		return nil // not handed over yet: the PV controller waits for the scheduler
	}
	pvName := "pvc-" + string(claim.UID)
	if _, err := p.volumes.Get(pvName); err == nil {
		return nil // provisioned; the PV controller binds it
	}
	pv, failure, err := p.volumeFor(ctx, claim, class, pvName)
	if err != nil {
		return err
	}
	if failure != "" {
		p.recorder.Event(claim, v1.EventTypeWarning, reasonProvisioningFailed, failure)
		return nil
	}
	p.recorder.Eventf(claim, v1.EventTypeNormal, reasonProvisioning, "External provisioner is provisioning volume for claim %q", key)
	_, err = p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("creating volume %s for claim %s: %w", pvName, key, err)
	}
	p.recorder.Eventf(claim, v1.EventTypeNormal, reasonProvisioningSucceeded, "Successfully provisioned volume %s", pvName)
	return nil
}

// waitsForConsumer reports whether class's volumes are provisioned once a pod using
// them is scheduled.
func waitsForConsumer(class *storagev1.StorageClass) bool {
	return class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// provisionerOf is the provisioner the PV controller handed claim to, if any.
func provisionerOf(claim *v1.PersistentVolumeClaim) string {
	if name := claim.Annotations[annStorageProvisioner]; name != "" {
		return name
	}
	return claim.Annotations[annBetaStorageProvisioner]
}

// volumeFor builds the volume named name for claim of class. A claim that cannot be
// provisioned returns the reason (for a ProvisioningFailed event) and no volume; an
// error is worth a retry.
func (p *provisioner) volumeFor(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, name string) (*v1.PersistentVolume, string, error) {
	size, ok := claim.Spec.Resources.Requests[v1.ResourceStorage]
	if !ok || size.Sign() <= 0 {
		return nil, fmt.Sprintf("spec.resources.requests.storage: expected a size greater than zero, found %q", size.String()), nil
	}
	if len(claim.Spec.AccessModes) == 0 {
		return nil, "spec.accessModes: expected at least one access mode, found none", nil
	}
	if claim.Spec.Selector != nil {
		return nil, "claim Selector is not supported", nil
	}
	if claim.Spec.DataSource != nil || claim.Spec.DataSourceRef != nil {
		return nil, fmt.Sprintf("spec.dataSource: driver %s cannot populate a volume from a data source", StorageDriver), nil
	}
	affinity, failure, err := p.affinityFor(ctx, claim, class)
	if failure != "" || err != nil {
		return nil, failure, err
	}
	var labels map[string]string
	if zone := affinityZone(affinity); zone != "" {
		labels = map[string]string{v1.LabelTopologyZone: zone}
	}
	reclaim := v1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{annDynamicallyProvisioned: StorageDriver}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: size},
			AccessModes: append([]v1.PersistentVolumeAccessMode(nil), claim.Spec.AccessModes...),
			VolumeMode:  claim.Spec.VolumeMode,
			ClaimRef: &v1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			StorageClassName:              class.Name,
			PersistentVolumeReclaimPolicy: reclaim,
			MountOptions:                  append([]string(nil), class.MountOptions...),
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: StorageDriver, VolumeHandle: name,
			}},
			NodeAffinity: affinity,
		},
	}, "", nil
}

// affinityFor is where the volume of claim is provisioned: on its selected node (the
// node's hostname, and its zone if it has one) if it has one, else in the class's
// allowedTopologies; nil means reachable from every node. A selected node that does
// not exist is given back to the scheduler (the annotation is removed), as
// csi-provisioner does, and reported as a failure.
func (p *provisioner) affinityFor(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) (*v1.VolumeNodeAffinity, string, error) {
	nodeName, selected := claim.Annotations[annSelectedNode]
	if !selected {
		return allowedTopologies(class), "", nil
	}
	node, err := p.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		// The cache may lag behind a node created a moment ago: ask the API server.
		node, err = p.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		why := fmt.Sprintf("failed to get target node: node %q not found; removed annotation %s for the scheduler to choose again", nodeName, annSelectedNode)
		return nil, why, p.reschedule(ctx, claim)
	} else if err != nil {
		return nil, "", err
	}
	host := node.Labels[v1.LabelHostname]
	if host == "" {
		return nil, fmt.Sprintf("annotation %s: node %q has no %s label to place the volume by", annSelectedNode, nodeName, v1.LabelHostname), nil
	}
	reqs := []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{host}}}
	if zone := node.Labels[v1.LabelTopologyZone]; zone != "" {
		reqs = append(reqs, v1.NodeSelectorRequirement{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{zone}})
	}
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: reqs}}}}, "", nil
}

// affinityZone is the one zone a volume's node affinity requires, or "": the zone a
// volume provisioned on a selected node is labelled with (as zonal cloud volumes
// are), so that kube-scheduler's VolumeZone checks it as VolumeBinding checks its
// node affinity.
func affinityZone(a *v1.VolumeNodeAffinity) string {
	if a == nil || a.Required == nil || len(a.Required.NodeSelectorTerms) != 1 {
		return ""
	}
	for _, r := range a.Required.NodeSelectorTerms[0].MatchExpressions {
		if r.Key == v1.LabelTopologyZone && r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// allowedTopologies is the node affinity of a volume of class provisioned with no
// selected node: its allowedTopologies (any of the terms), or nil for none.
func allowedTopologies(class *storagev1.StorageClass) *v1.VolumeNodeAffinity {
	var terms []v1.NodeSelectorTerm
	for _, t := range class.AllowedTopologies {
		var term v1.NodeSelectorTerm
		for _, e := range t.MatchLabelExpressions {
			term.MatchExpressions = append(term.MatchExpressions, v1.NodeSelectorRequirement{
				Key: e.Key, Operator: v1.NodeSelectorOpIn, Values: append([]string(nil), e.Values...),
			})
		}
		if len(term.MatchExpressions) > 0 {
			terms = append(terms, term)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: terms}}
}

// reschedule removes the claim's selected-node annotation, so that the scheduler
// chooses again.
func (p *provisioner) reschedule(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	updated := claim.DeepCopy()
	delete(updated.Annotations, annSelectedNode)
	_, err := p.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("removing annotation %s of claim %s/%s: %w", annSelectedNode, claim.Namespace, claim.Name, err)
	}
	return nil
}
