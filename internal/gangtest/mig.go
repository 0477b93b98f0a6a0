package gangtest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/cluster"
)

// MIGDriver is the DRA driver of the test's partitionable GPUs: one GPU per node,
// offered as MIG-style partitions that share its seven memory slices.
const MIGDriver = "mig.example.com"

// MIGProfiles are the partitions MIGSlices offers of one GPU: how many of each profile,
// and the memory slices each consumes.
var MIGProfiles = []struct {
	Profile string
	Count   int
	Slices  int64
}{{"1g", 7, 1}, {"3g", 2, 3}, {"7g", 1, 7}}

// MIGSlices returns node's ResourceSlices of one GPU partitioned MIG-style, in pool
// node of MIGDriver: one slice of the pool's shared counters (counter set gpu-0, seven
// memory slices) and one of its partitions (MIGProfiles: seven of profile 1g, two of
// 3g, one of 7g, attribute profile), each consuming its memory slices from gpu-0. The
// partitions allocated together may not use more than the seven slices.
func MIGSlices(node string) []*resourcev1.ResourceSlice {
	pool := resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2}
	counters := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-mig-counters", ResourceVersion: "1"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: MIGDriver, NodeName: ptr.To(node), Pool: pool,
			SharedCounters: []resourcev1.CounterSet{{Name: "gpu-0", Counters: map[string]resourcev1.Counter{
				"memory-slices": {Value: resource.MustParse("7")},
			}}},
		},
	}
	var devices []resourcev1.Device
	for _, p := range MIGProfiles {
		for i := range p.Count {
			devices = append(devices, resourcev1.Device{
				Name: fmt.Sprintf("gpu-0-%s-%d", p.Profile, i),
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
					"profile": {StringValue: ptr.To(p.Profile)},
				},
				ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: map[string]resourcev1.Counter{
					"memory-slices": {Value: *resource.NewQuantity(p.Slices, resource.DecimalSI)},
				}}},
			})
		}
	}
	partitions := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-mig", ResourceVersion: "1"},
		Spec:       resourcev1.ResourceSliceSpec{Driver: MIGDriver, NodeName: ptr.To(node), Pool: pool, Devices: devices},
	}
	return []*resourcev1.ResourceSlice{counters, partitions}
}

// MIGClass is the DeviceClass mig-<profile>, which selects MIGDriver's partitions of
// that profile.
func MIGClass(profile string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "mig-" + profile, ResourceVersion: "1"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf(
				"device.driver == %q && device.attributes[%q].profile == %q", MIGDriver, MIGDriver, profile)},
		}}},
	}
}

// MIGClaim is a ResourceClaim in namespace ns asking for one partition of class
// mig-<profile>.
func MIGClaim(ns, name, profile string) *resourcev1.ResourceClaim {
	c := GPUClaim(ns, name, 1)
	c.Spec.Devices.Requests[0].Exactly.DeviceClassName = "mig-" + profile
	return c
}

// MIGCluster is a snapshot of nodes nodes n0, n1, … with one GPU each, partitioned
// MIG-style (MIGSlices), and the classes of its profiles (MIGClass).
func MIGCluster(nodes int) *cluster.Snapshot {
	var ns []*corev1.Node
	for i := range nodes {
		ns = append(ns, Node(fmt.Sprintf("n%d", i)).Obj())
	}
	snap := cluster.New(ns, nil)
	for _, p := range MIGProfiles {
		snap.SetObject(MIGClass(p.Profile))
	}
	for _, n := range ns {
		for _, s := range MIGSlices(n.Name) {
			snap.SetObject(s)
		}
	}
	return snap
}
