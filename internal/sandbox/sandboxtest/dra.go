package sandboxtest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-sched/muster/internal/sandbox"
)

// GPURequest is the name of the one request of the claims GPUClaim and
// GPUClaimTemplate make.
const GPURequest = "gpu"

// GPUClaimSpec asks for exactly gpus devices of the sandbox's GPU DeviceClass, in one
// request named GPURequest.
func GPUClaimSpec(gpus int) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{
			Name: GPURequest,
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: sandbox.DeviceClassGPU,
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
				Count:           int64(gpus),
			},
		}},
	}}
}

// GPUClaim is a ResourceClaim named name in namespace ns for gpus GPUs (see
// GPUClaimSpec).
func GPUClaim(ns, name string, gpus int) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: GPUClaimSpec(gpus)}
}

// GPUClaimTemplate is a ResourceClaimTemplate named name in namespace ns whose claims
// ask for gpus GPUs (see GPUClaimSpec).
func GPUClaimTemplate(ns, name string, gpus int) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: GPUClaimSpec(gpus)},
	}
}

// ResourceClaimTemplate adds a pod claim named name made from the template (one
// ResourceClaim per pod, by upstream's resourceclaim controller), used by the main
// container.
func (b *PodBuilder) ResourceClaimTemplate(name, template string) *PodBuilder {
	return b.addResourceClaim(v1.PodResourceClaim{Name: name, ResourceClaimTemplateName: &template})
}

// ResourceClaim adds a pod claim named name that uses the existing ResourceClaim
// claimName, used by the main container.
func (b *PodBuilder) ResourceClaim(name, claimName string) *PodBuilder {
	return b.addResourceClaim(v1.PodResourceClaim{Name: name, ResourceClaimName: &claimName})
}

// addResourceClaim adds pc to the pod and to the main container's claims.
func (b *PodBuilder) addResourceClaim(pc v1.PodResourceClaim) *PodBuilder {
	b.pod.Spec.ResourceClaims = append(b.pod.Spec.ResourceClaims, pc)
	c := &b.pod.Spec.Containers[0]
	c.Resources.Claims = append(c.Resources.Claims, v1.ResourceClaim{Name: pc.Name})
	return b
}

// PodGroup sets the pod's spec.schedulingGroup to the native PodGroup named name.
func (b *PodBuilder) PodGroup(name string) *PodBuilder {
	b.pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
	return b
}

// Allocation is the allocation of the GPUs named devices (gpu-<i>) of node to the
// request GPURequest, as kube-scheduler writes it for devices of a node-local
// ResourceSlice: each device in the node's pool, and a nodeSelector of the node by
// name.
func Allocation(node string, devices ...string) *resourceapi.AllocationResult {
	a := &resourceapi.AllocationResult{
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}
	for _, d := range devices {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: GPURequest, Driver: sandbox.DRADriver, Pool: node, Device: d,
		})
	}
	return a
}

// Allocate writes alloc to the ResourceClaim named name in namespace ns and reserves it
// for consumer, as kube-scheduler does before it binds a pod: it adds the
// delete-protection finalizer first (so that upstream's resourceclaim controller
// deallocates the claim once it is reserved for nobody), then writes the status.
func (e *Env) Allocate(t testing.TB, ns, name string, alloc *resourceapi.AllocationResult, consumer resourceapi.ResourceClaimConsumerReference) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	api := e.Kube.ResourceV1().ResourceClaims(ns)
	claim, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting ResourceClaim %s/%s: %v", ns, name, err)
	}
	if !slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
		claim.Finalizers = append(claim.Finalizers, resourceapi.Finalizer)
		if claim, err = api.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("adding the finalizer of ResourceClaim %s/%s: %v", ns, name, err)
		}
	}
	claim.Status.Allocation = alloc
	claim.Status.ReservedFor = append(claim.Status.ReservedFor, consumer)
	got, err := api.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("writing the allocation of ResourceClaim %s/%s: %v", ns, name, err)
	}
	return got
}

// PodConsumer is the reservedFor entry of pod.
func PodConsumer(pod *v1.Pod) resourceapi.ResourceClaimConsumerReference {
	return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID}
}

// WaitForResourceClaim waits until cond holds for the current version of the
// ResourceClaim named name in namespace ns (gone is nil) and returns that version.
// On timeout the failure names what and shows the claim's last allocation and
// reservations.
func (e *Env) WaitForResourceClaim(t testing.TB, ns, name, what string, cond func(*resourceapi.ResourceClaim) bool) *resourceapi.ResourceClaim {
	t.Helper()
	var last *resourceapi.ResourceClaim
	seen := "never read"
	e.waitOrFail(t, func(ctx context.Context) (bool, error) {
		got, err := e.Kube.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			last, seen = nil, "gone"
		case err != nil:
			return false, err
		default:
			last = got
			seen = fmt.Sprintf("allocation %+v reservedFor %+v finalizers %v", got.Status.Allocation, got.Status.ReservedFor, got.Finalizers)
		}
		return cond(last), nil
	}, func() string { return fmt.Sprintf("ResourceClaim %s/%s to be %s; last seen: %s", ns, name, what, seen) })
	return last
}

// waitOrFail polls cond, stepping a fake clock, until it holds, and fails the test
// with what() on timeout.
func (e *Env) waitOrFail(t testing.TB, cond func(context.Context) (bool, error), what func() string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if ok || err != nil {
			return ok, err
		}
		if e.Clock != nil {
			e.Clock.Step(e.step)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what(), err)
	}
}

// waitForResourceSlices waits (without stepping a fake clock) until the sandbox's DRA
// driver has published the ResourceSlice of every node named, so that a test's nodes
// have their devices, as the sandbox's own nodes have when it starts.
func (e *Env) waitForResourceSlices(t testing.TB, names []string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, WaitTimeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			if _, err := e.Kube.ResourceV1().ResourceSlices().Get(ctx, sandbox.ResourceSliceName(name), metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return false, nil
			} else if err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the ResourceSlices of nodes %v: %v", names, err)
	}
}
