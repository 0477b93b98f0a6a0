package sandbox

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// The sandbox's storage: a simulated CSI driver, its two StorageClasses and its
// CSIDriver object, installed in every sandbox (see installStorage), and a CSINode per
// node (see provisioner).
const (
	// StorageDriver names the simulated CSI driver: the provisioner of the sandbox's
	// StorageClasses, the driver of the volumes it provisions and of every CSINode. It
	// is one name for all three, as a CSI driver's is (kube-scheduler's NodeVolumeLimits
	// counts a claim still to be provisioned against the driver its class's provisioner
	// names), so it is a DNS subdomain: CSI driver names have no "/".
	StorageDriver = "local.sandbox.muster.dev"
	// StorageClassLocal is a WaitForFirstConsumer class of node-local volumes: a claim
	// is provisioned once a scheduler has chosen its node (annotation
	// volume.kubernetes.io/selected-node), on that node, in that node's zone.
	StorageClassLocal = "muster-local"
	// StorageClassStandard is an Immediate class: a claim is provisioned at once, as a
	// volume every node can reach (or, with allowedTopologies, the nodes they select).
	StorageClassStandard = "muster-standard"
	// DefaultVolumeLimit is each node's CSINode allocatable count of StorageDriver
	// volumes when Options.VolumeLimit is 0.
	DefaultVolumeLimit = 16
)

// storageClasses are the sandbox's StorageClasses.
func storageClasses() []*storagev1.StorageClass {
	class := func(name string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
		return &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: name},
			Provisioner:          StorageDriver,
			ReclaimPolicy:        ptr.To(v1.PersistentVolumeReclaimDelete),
			VolumeBindingMode:    ptr.To(mode),
			AllowVolumeExpansion: ptr.To(false),
		}
	}
	return []*storagev1.StorageClass{
		class(StorageClassLocal, storagev1.VolumeBindingWaitForFirstConsumer),
		class(StorageClassStandard, storagev1.VolumeBindingImmediate),
	}
}

// csiDriver is the CSIDriver object of StorageDriver: nothing to attach, no pod info on
// mount, persistent volumes only (generic ephemeral volumes are persistent claims).
func csiDriver() *storagev1.CSIDriver {
	return &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: StorageDriver},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(false),
			PodInfoOnMount:       ptr.To(false),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}
}

// installStorage creates the sandbox's StorageClasses and CSIDriver; ones that exist
// already are kept as they are.
func installStorage(ctx context.Context, client kubernetes.Interface) error {
	for _, sc := range storageClasses() {
		_, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating StorageClass %s: %w", sc.Name, err)
		}
	}
	_, err := client.StorageV1().CSIDrivers().Create(ctx, csiDriver(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CSIDriver %s: %w", StorageDriver, err)
	}
	return nil
}

// createCSINodes creates the CSINode of every node there is (see csiNode), in
// parallel, so that a sandbox starts with them all; the provisioner keeps them, and
// makes those of nodes created later.
func createCSINodes(ctx context.Context, client kubernetes.Interface, limit int32) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes for their CSINodes: %w", err)
	}
	errs := make([]error, len(nodes.Items))
	workqueue.ParallelizeUntil(ctx, nodeCreateWorkers, len(nodes.Items), func(i int) {
		c := csiNode(&nodes.Items[i], limit)
		_, err := client.StorageV1().CSINodes().Create(ctx, c, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs[i] = fmt.Errorf("creating CSINode %s: %w", c.Name, err)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// topologyKeys are the node labels the driver reports as its topology on node, in
// the order a CSI node plugin reports them: the hostname, and the zone if the node
// has one.
func topologyKeys(node *v1.Node) []string {
	keys := []string{v1.LabelHostname}
	if node.Labels[v1.LabelTopologyZone] != "" {
		keys = append(keys, v1.LabelTopologyZone)
	}
	return keys
}

// csiNode is the CSINode of node, as a kubelet with StorageDriver's node plugin
// registered writes it: owned by the node, one driver with the node's name as its
// node ID and limit volumes allocatable.
func csiNode(node *v1.Node, limit int32) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name:         StorageDriver,
			NodeID:       node.Name,
			TopologyKeys: topologyKeys(node),
			Allocatable:  &storagev1.VolumeNodeResources{Count: ptr.To(limit)},
		}}},
	}
}
