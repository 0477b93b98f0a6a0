package explain

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	gt "github.com/muster-sched/muster/internal/gangtest"
)

// TestClaimLines: step 4 shows each member's claims: the devices allocated and whether
// they are reserved for it, a claim not allocated, and a template's claim not made yet.
func TestClaimLines(t *testing.T) {
	a := gt.Pod("w-0").UID("uid-a").DeviceClaim("gpu", "w-0-gpu").Obj()
	b := gt.Pod("w-1").UID("uid-b").DeviceClaim("gpu", "w-1-gpu").Obj()
	c := gt.Pod("w-2").UID("uid-c").Obj()
	c.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpus")}}
	allocated := gt.GPUClaim("default", "w-0-gpu", 1)
	allocated.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpus", Driver: gt.GPUDriver, Pool: "n3", Device: "gpu-5"}}}}
	allocated.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "w-0", UID: types.UID("uid-a")}}
	f := Facts{Members: []*corev1.Pod{a, b, c}, Claims: map[string]*resourcev1.ResourceClaim{
		"default/w-0-gpu": allocated, "default/w-1-gpu": gt.GPUClaim("default", "w-1-gpu", 1)}}
	got := strings.Join(claimLines(f), "\n")
	for _, want := range []string{
		"member w-0 claims gpu: claim w-0-gpu allocated gpu.nvidia.com/n3/gpu-5 (reserved for it)",
		"member w-1 claims gpu: claim w-1-gpu not allocated",
		"member w-2 claims gpu: its ResourceClaim does not exist yet",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
