package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// The sandbox's devices: a simulated DRA driver of NVIDIA GPUs (resource.k8s.io/v1),
// its DeviceClass, installed in every sandbox (see installDRA), and one ResourceSlice
// per node that has DRA GPUs (see draDriver).
const (
	// DRADriver names the simulated DRA driver of GPUs, as NVIDIA's DRA driver is
	// named: the driver of every ResourceSlice the sandbox publishes and the domain of
	// its devices' attributes (gpu.nvidia.com/productName, …).
	DRADriver = "gpu.nvidia.com"
	// DeviceClassGPU is the DeviceClass of DRADriver's GPUs, selecting
	// device.driver == "gpu.nvidia.com".
	DeviceClassGPU = "gpu.nvidia.com"

	// AttributeProductName is a GPU's product name (string), e.g.
	// "NVIDIA H100 80GB HBM3".
	AttributeProductName resourceapi.QualifiedName = "productName"
	// AttributeIndex is a GPU's index on its node (int), 0 … n-1.
	AttributeIndex resourceapi.QualifiedName = "index"
	// AttributeCliqueID is the NVLink domain of a GPU's node (string), e.g.
	// "clique-a": the attribute a claim's matchAttribute constraint names to keep
	// its devices in one domain.
	AttributeCliqueID resourceapi.QualifiedName = "cliqueID"
	// CapacityMemory is a GPU's memory (quantity), e.g. 80Gi.
	CapacityMemory resourceapi.QualifiedName = "memory"

	// DefaultDRAProduct is the product name of a pool's DRA GPUs when it sets none.
	DefaultDRAProduct = "NVIDIA H100 80GB HBM3"
	// DefaultDRAMemory is the memory of a pool's DRA GPUs when it sets none.
	DefaultDRAMemory = "80Gi"
)

// Node annotations and labels that describe a node's DRA GPUs to the sandbox's DRA
// driver, as a node's hardware would to a real one. Cluster.Nodes writes them from
// the pool's fields; a node created otherwise may carry them too.
const (
	// AnnotationDRAGPUs is the number of DRA GPUs of the node, "1" to "128".
	AnnotationDRAGPUs = "sandbox.muster.dev/dra-gpus"
	// AnnotationDRAProduct is their product name; DefaultDRAProduct if absent.
	AnnotationDRAProduct = "sandbox.muster.dev/dra-product"
	// AnnotationDRAMemory is the memory of each; DefaultDRAMemory if absent.
	AnnotationDRAMemory = "sandbox.muster.dev/dra-memory"
	// LabelGPUClique is the NVLink domain of the node, as NVIDIA's GPU feature
	// discovery labels nodes; it is the cliqueID attribute of the node's devices
	// (empty when the node has no label).
	LabelGPUClique = "nvidia.com/gpu.clique"
)

// deviceClasses are the sandbox's DeviceClasses.
func deviceClasses() []*resourceapi.DeviceClass {
	return []*resourceapi.DeviceClass{{
		ObjectMeta: metav1.ObjectMeta{Name: DeviceClassGPU},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", DRADriver)},
		}}},
	}}
}

// installDRA creates the sandbox's DeviceClasses; ones that exist already are kept
// as they are.
func installDRA(ctx context.Context, client kubernetes.Interface) error {
	for _, dc := range deviceClasses() {
		_, err := client.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating DeviceClass %s: %w", dc.Name, err)
		}
	}
	return nil
}

// nodeGPUs describes the DRA GPUs of one node.
type nodeGPUs struct {
	count   int
	product string
	memory  resource.Quantity
	clique  string
}

// draGPUs reads the DRA GPUs of node from its annotations and clique label. A node
// without AnnotationDRAGPUs has none (count 0). Malformed values are errors naming
// the annotation and the value: a node's annotations may have been written by anyone.
func draGPUs(node *v1.Node) (nodeGPUs, error) {
	raw, ok := node.Annotations[AnnotationDRAGPUs]
	if !ok {
		return nodeGPUs{}, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > resourceapi.ResourceSliceMaxDevices {
		return nodeGPUs{}, fmt.Errorf("node %s annotation %s: expected a number of GPUs from 1 to %d, found %q",
			node.Name, AnnotationDRAGPUs, resourceapi.ResourceSliceMaxDevices, raw)
	}
	g := nodeGPUs{count: n, product: DefaultDRAProduct, memory: resource.MustParse(DefaultDRAMemory), clique: node.Labels[LabelGPUClique]}
	if p, ok := node.Annotations[AnnotationDRAProduct]; ok {
		if err := checkAttributeString(p); err != nil {
			return nodeGPUs{}, fmt.Errorf("node %s annotation %s: %w", node.Name, AnnotationDRAProduct, err)
		}
		g.product = p
	}
	if m, ok := node.Annotations[AnnotationDRAMemory]; ok {
		if g.memory, err = positiveQuantity("node "+node.Name+" annotation "+AnnotationDRAMemory, m); err != nil {
			return nodeGPUs{}, err
		}
	}
	if err := checkAttributeString(g.clique); err != nil {
		return nodeGPUs{}, fmt.Errorf("node %s label %s: %w", node.Name, LabelGPUClique, err)
	}
	return g, nil
}

// checkAttributeString checks that s fits in a device's string attribute.
func checkAttributeString(s string) error {
	if len(s) > resourceapi.DeviceAttributeMaxValueLength {
		return fmt.Errorf("expected at most %d characters, found %d in %q", resourceapi.DeviceAttributeMaxValueLength, len(s), s)
	}
	return nil
}

// ResourceSliceName is the name of the ResourceSlice of the GPUs of the node named node.
func ResourceSliceName(node string) string { return node + "-" + DRADriver }

// resourceSlice is the ResourceSlice of node's GPUs g, as a kubelet plugin of
// DRADriver publishes it: owned by the node, for that node, one pool named after it
// (generation 1, one slice) with a device gpu-<i> per GPU.
func resourceSlice(node *v1.Node, g nodeGPUs) *resourceapi.ResourceSlice {
	devices := make([]resourceapi.Device, g.count)
	for i := range devices {
		devices[i] = resourceapi.Device{
			Name: "gpu-" + strconv.Itoa(i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				AttributeProductName: {StringValue: ptr.To(g.product)},
				AttributeIndex:       {IntValue: ptr.To(int64(i))},
				AttributeCliqueID:    {StringValue: ptr.To(g.clique)},
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{CapacityMemory: {Value: g.memory.DeepCopy()}},
		}
	}
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: ResourceSliceName(node.Name),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   DRADriver,
			NodeName: ptr.To(node.Name),
			Pool:     resourceapi.ResourcePool{Name: node.Name, Generation: 1, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}
}

// createResourceSlices publishes the ResourceSlice of every node there is that has
// DRA GPUs, in parallel, so that a sandbox starts with them all; the driver keeps
// them, and makes those of nodes created later. A node with malformed annotations
// is left to the driver, which says why on the node.
func createResourceSlices(ctx context.Context, client kubernetes.Interface) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes for their ResourceSlices: %w", err)
	}
	errs := make([]error, len(nodes.Items))
	workqueue.ParallelizeUntil(ctx, nodeCreateWorkers, len(nodes.Items), func(i int) {
		node := &nodes.Items[i]
		g, err := draGPUs(node)
		if err != nil || g.count == 0 {
			return
		}
		_, err = client.ResourceV1().ResourceSlices().Create(ctx, resourceSlice(node, g), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs[i] = fmt.Errorf("creating ResourceSlice of node %s: %w", node.Name, err)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}
