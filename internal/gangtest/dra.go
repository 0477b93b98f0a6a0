package gangtest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// GPUDriver is the DRA driver of the test GPUs, and GPUClass its DeviceClass.
const (
	GPUDriver = "gpu.nvidia.com"
	GPUClass  = "gpu.nvidia.com"
)

// DeviceClass is the DeviceClass that selects every device of GPUDriver.
func DeviceClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: GPUClass, ResourceVersion: "1"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", GPUDriver)},
		}}},
	}
}

// GPUSlice is node's ResourceSlice of gpus devices gpu-0, gpu-1, … of GPUDriver, in the
// NVLink domain clique (attribute cliqueID), each with attributes productName and
// index and capacity memory.
func GPUSlice(node string, gpus int, clique string) *resourcev1.ResourceSlice {
	devices := make([]resourcev1.Device, gpus)
	for i := range devices {
		devices[i] = resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"productName": {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
				"index":       {IntValue: ptr.To(int64(i))},
				"cliqueID":    {StringValue: ptr.To(clique)},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				"memory": {Value: resource.MustParse("80Gi")},
			},
		}
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + GPUDriver, ResourceVersion: "1"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   GPUDriver,
			NodeName: ptr.To(node),
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}
}

// GPUClaim is a ResourceClaim in namespace ns asking for count devices of GPUClass,
// with the CEL selectors given.
func GPUClaim(ns, name string, count int64, selectors ...string) *resourcev1.ResourceClaim {
	req := resourcev1.ExactDeviceRequest{DeviceClassName: GPUClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}
	for _, s := range selectors {
		req.Selectors = append(req.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("claim-" + ns + "-" + name), ResourceVersion: "1"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: &req}},
		}},
	}
}

// DeviceClaim makes the pod use the ResourceClaim claim, under the entry name in
// spec.resourceClaims, in its main container.
func (b *PodBuilder) DeviceClaim(name, claim string) *PodBuilder {
	b.p.Spec.ResourceClaims = append(b.p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: ptr.To(claim)})
	c := &b.p.Spec.Containers[0]
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
	return b
}

// UID sets the pod's UID.
func (b *PodBuilder) UID(uid string) *PodBuilder { b.p.UID = types.UID(uid); return b }

// DeviceTaintRule is a DeviceTaintRule named name that taints device (of GPUDriver, in
// pool) with effect: an administrator draining a GPU.
func DeviceTaintRule(name, pool, device string, effect resourcev1.DeviceTaintEffect) *resourcev1.DeviceTaintRule {
	return &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To(GPUDriver), Pool: ptr.To(pool), Device: ptr.To(device)},
			Taint:          resourcev1.DeviceTaint{Key: "example.com/unhealthy", Effect: effect},
		},
	}
}
