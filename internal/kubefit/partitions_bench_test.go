package kubefit_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// migFleet is nodes nodes of one MIG-partitioned GPU each (gt.MIGSlices), each with a
// 3g partition allocated to a pod of its own, and those pods.
func migFleet(nodes int) (*cluster.Snapshot, []*corev1.Pod) {
	snap := gt.MIGCluster(nodes)
	var pods []*corev1.Pod
	for i := range nodes {
		node := fmt.Sprintf("n%d", i)
		name := "p" + node
		pod := gt.Pod(name).UID("uid-"+name).DeviceClaim("mig", name).Node(node).Obj()
		c := gt.MIGClaim("default", name, "3g")
		c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpus", Driver: gt.MIGDriver, Pool: node, Device: "gpu-0-3g-0"}}}}
		c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: pod.UID}}
		snap.SetObject(c)
		pods = append(pods, pod)
	}
	return snap, pods
}

// BenchmarkPartitions measures, on 1,000 nodes of one MIG-partitioned GPU each, a 3g
// partition in use on each: counting the free partitions of every node and class once
// the claims changed (what FreeDevices and ClaimedDevices read, made once per version
// of the objects), and what one member gives back when it ends (OwnDevices, read for
// each running member at each forecast).
func BenchmarkPartitions(b *testing.B) {
	snap, pods := migFleet(1000)
	objs := snap.Objects()
	kubefit.NodeDevices(objs) // the classes' index, made once per version of the devices
	b.Run("claims-changed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			snap.SetObject(gt.MIGClaim("default", fmt.Sprintf("bump-%d", i), "1g")) // a new version of the objects
			kubefit.ClaimedDevices(objs)
		}
	})
	b.Run("given-back", func(b *testing.B) {
		kubefit.ClaimedDevices(objs)
		for i := 0; i < b.N; i++ {
			kubefit.OwnDevices(snap, pods[i%len(pods)])
		}
	})
}
