package engine_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// TestExpectedStartOfZonalData: two 2-GPU nodes in zones a and b; a job runs for an hour
// on all of zone a's GPUs. A queued job whose data is on a disk of zone a waits, and is
// expected to start when the first ends, not at once on zone b's idle GPUs, where its
// volume may not be used.
func TestExpectedStartOfZonalData(t *testing.T) {
	e := sim.NewEngineWith(0)
	for n, zone := range map[string]string{"n-0": "a", "n-1": "b"} {
		e.SetNode(gt.Node(n).GPU(2).Label(corev1.LabelTopologyZone, zone).Obj())
	}
	now := sim.Epoch
	runTwoGPUsForAnHour(e, "n-0", now)
	e.SetObject(gt.ZonalVolume("pv-a", "a", "default", "data"))
	e.SetObject(gt.BoundClaim("default", "data", "pv-a"))
	data := "Coscheduling/default/data"
	e.SetGroup(engine.GroupSpec{Key: data, Source: engine.Coscheduling, Namespace: "default", Name: "data", MinMember: 1})
	e.SetPod(gt.Pod("data-0").GPU(1).Claim("data").Obj(), data)
	expectQueuedForAnHour(t, e, data, now, "the volume may not be used in zone b")
}
