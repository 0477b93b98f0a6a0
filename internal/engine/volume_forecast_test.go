package engine_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// TestExpectedStartOfZonalData: two 2-GPU nodes in zones a and b; a job runs for an hour
// on all of zone a's GPUs. A queued job whose data is on a disk of zone a waits, and is
// expected to start when the first ends, not at once on zone b's idle GPUs, where its
// volume may not be used.
func TestExpectedStartOfZonalData(t *testing.T) {
	e, now := zoneAFullForAnHour()
	e.SetObject(gt.ZonalVolume("pv-a", "a", "default", "data"))
	e.SetObject(gt.BoundClaim("default", "data", "pv-a"))
	data := "Coscheduling/default/data"
	e.SetGroup(engine.GroupSpec{Key: data, Source: engine.Coscheduling, Namespace: "default", Name: "data", MinMember: 1})
	e.SetPod(gt.Pod("data-0").GPU(1).Claim("data").Obj(), data)
	expectQueuedForAnHour(t, e, data, now, "the volume may not be used in zone b")
}

// TestExpectedStartOfZonalClass: as TestExpectedStartOfZonalData, but the job's claim is
// not bound yet: its StorageClass provisions disks at the first consumer, in zone a
// only. The job is expected to start when zone a's GPUs are freed, not at once in zone
// b, where its disk may not be provisioned.
func TestExpectedStartOfZonalClass(t *testing.T) {
	e, now := zoneAFullForAnHour()
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	e.SetObject(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zonal-a", ResourceVersion: "1"},
		Provisioner: "disk.csi.example.com", VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: []string{"a"}}}}}})
	claim := gt.BoundClaim("default", "data", "")
	class := "zonal-a"
	claim.Spec.StorageClassName, claim.Status.Phase = &class, corev1.ClaimPending
	e.SetObject(claim)
	data := "Coscheduling/default/data"
	e.SetGroup(engine.GroupSpec{Key: data, Source: engine.Coscheduling, Namespace: "default", Name: "data", MinMember: 1})
	e.SetPod(gt.Pod("data-0").GPU(1).Claim("data").Obj(), data)
	expectQueuedForAnHour(t, e, data, now, "the disk may not be provisioned in zone b")
}

// zoneAFullForAnHour returns an engine with two 2-GPU nodes, n-0 in zone a and n-1 in
// zone b, and a job running for an hour on both of n-0's GPUs, at sim.Epoch.
func zoneAFullForAnHour() (*engine.Engine, time.Time) {
	e := sim.NewEngineWith(0)
	for n, zone := range map[string]string{"n-0": "a", "n-1": "b"} {
		e.SetNode(gt.Node(n).GPU(2).Label(corev1.LabelTopologyZone, zone).Obj())
	}
	runTwoGPUsForAnHour(e, "n-0", sim.Epoch)
	return e, sim.Epoch
}
