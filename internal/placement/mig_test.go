package placement_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// placeMIG places a pod of one partition of profile on node, its claim allocated there.
func placeMIG(t *testing.T, snap *cluster.Snapshot, name, profile, node string) {
	t.Helper()
	snap.SetObject(gt.MIGClaim("default", name+"-mig", profile))
	pod := gt.Pod(name).UID("uid-"+name).DeviceClaim("mig", name+"-mig").Obj()
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	plan, diag := placement.Place(snap, gang(name, 1, func(int) *corev1.Pod { return pod }), placement.Options{})
	if plan == nil || plan.Assignments[0].Node != node {
		t.Fatalf("%s: plan %+v (%v), want it on %s", name, plan, diag, node)
	}
}

// TestPartitionsCountWhatTheirCountersLeave: the GPU of n0 has a 3g partition in use,
// which leaves four of its seven memory slices, room for four 1g partitions; n1's has
// two 1g partitions in use, leaving five. A member asking for a 1g partition goes to
// n0, the node with the fewest it can use, though n0 has none of its 1g partitions
// allocated (counted by device, n0 had seven free and n1 five).
func TestPartitionsCountWhatTheirCountersLeave(t *testing.T) {
	snap := gt.MIGCluster(2)
	placeMIG(t, snap, "big", "3g", "n0")
	placeMIG(t, snap, "small-0", "1g", "n1")
	placeMIG(t, snap, "small-1", "1g", "n1")
	snap.SetObject(gt.MIGClaim("default", "w-mig", "1g"))
	w := gt.Pod("w").UID("uid-w").DeviceClaim("mig", "w-mig").Obj()
	plan, diag := placement.Place(snap, gang("w", 1, func(int) *corev1.Pod { return w }), placement.Options{})
	if plan == nil {
		t.Fatal(diag)
	}
	if got := plan.Assignments[0].Node; got != "n0" {
		t.Errorf("w on %s, want n0, whose GPU has room for four 1g partitions left against n1's five", got)
	}
}

// TestPartitionsBeyondTheCountersDoNotFit: with a 7g partition in use, a node's GPU has
// no memory slice left, and a member asking for a 1g partition, pinned there, does not
// fit, though six 1g partitions are unallocated.
func TestPartitionsBeyondTheCountersDoNotFit(t *testing.T) {
	snap := gt.MIGCluster(1)
	placeMIG(t, snap, "whole", "7g", "n0")
	snap.SetObject(gt.MIGClaim("default", "w-mig", "1g"))
	w := gt.Pod("w").UID("uid-w").DeviceClaim("mig", "w-mig").Obj()
	if plan, _ := placement.Place(snap, gang("w", 1, func(int) *corev1.Pod { return w }), placement.Options{}); plan != nil {
		t.Fatalf("w placed on %s, want it not to fit: the 7g partition holds every memory slice", plan.Assignments[0].Node)
	}
}
