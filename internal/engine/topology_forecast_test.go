package engine_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/sim"
)

// TestExpectedStartInOneRack: racks r0 (n-0, n-1) and r1 (n-2, n-3) of 2-GPU nodes; jobs
// run on all of n-1's GPUs for an hour and on all of n-3's for three. A queued gang of
// two 2-GPU members that requires one rack waits, though n-0 and n-2 are free, one in
// each rack. It is expected to start in an hour, when r0 is free, not at once across
// the racks.
func TestExpectedStartInOneRack(t *testing.T) {
	e, now := racksHalfBusy()
	rack := "Coscheduling/default/rack"
	e.SetGroup(engine.GroupSpec{Key: rack, Source: engine.Coscheduling, Namespace: "default", Name: "rack", MinMember: 2,
		Topology: placement.Topology{Required: "example.com/rack"}})
	e.SetPod(gt.Pod("rack-0").GPU(2).Obj(), rack)
	e.SetPod(gt.Pod("rack-1").GPU(2).Obj(), rack)
	expectQueuedForAnHour(t, e, rack, now, "n-0 and n-2 are free, in two racks")
}

// TestExpectedStartOfSelfAffineGang: the same racks, and a gang whose members require
// each other in one rack by their pod affinity, not by muster.dev/topology: it is
// expected to start in an hour too, when r0 is free.
func TestExpectedStartOfSelfAffineGang(t *testing.T) {
	e, now := racksHalfBusy()
	aff := queueAffine(e, "aff", "job", "aff")
	expectQueuedForAnHour(t, e, aff, now, "n-0 and n-2 are free, in two racks")
}

// TestSelfAffineForecastFollowsThePods: the same racks, and a pod the gang's affinity
// selects running on n-2 (it asks for no GPU): the gang may go only where that pod is,
// and no rack is chosen for it. Once the pod is gone, the gang is expected to start in
// an hour within one rack, as in TestExpectedStartOfSelfAffineGang: the forecast's
// domains follow the pods, not only the nodes.
func TestSelfAffineForecastFollowsThePods(t *testing.T) {
	e, now := racksHalfBusy()
	runLabelled(e, "stray", "job", "aff", "n-2")
	aff := queueAffine(e, "aff", "job", "aff")
	now = now.Add(sim.SimForecastEvery)
	e.Step(now) // forecast with the stray pod running
	e.RemovePod("default/stray-0")
	expectQueuedForAnHour(t, e, aff, now, "the stray pod is gone; n-0 and n-2 are free, in two racks")
}

// TestExpectedStartBesideACachePod: the same racks, and a dataset cache pod (no GPU) on
// n-1. A gang of two 2-GPU members that require the cache's rack by their pod affinity
// may run only in r0: it is expected to start in an hour, when n-1's GPUs come back,
// not at once on n-0 and n-2.
func TestExpectedStartBesideACachePod(t *testing.T) {
	e, now := racksHalfBusy()
	runLabelled(e, "cache", "app", "cache", "n-1")
	near := queueAffine(e, "near", "app", "cache")
	expectQueuedForAnHour(t, e, near, now, "n-0 and n-2 are free, but only r0 has the cache")
}

// racksHalfBusy returns an engine with racks r0 (n-0, n-1) and r1 (n-2, n-3) of 2-GPU
// nodes, jobs running on all of n-1's GPUs for an hour and on all of n-3's for three,
// stepped at the returned time.
func racksHalfBusy() (*engine.Engine, time.Time) {
	e := sim.NewEngineWith(0)
	for n, rack := range map[string]string{"n-0": "r0", "n-1": "r0", "n-2": "r1", "n-3": "r1"} {
		e.SetNode(gt.Node(n).GPU(2).Label("example.com/rack", rack).Obj())
	}
	now := sim.Epoch
	runTwoGPUsForAnHour(e, "n-1", now)
	occupy := "Coscheduling/default/occupy"
	e.SetGroup(engine.GroupSpec{Key: occupy, Source: engine.Coscheduling, Namespace: "default", Name: "occupy", MinMember: 1})
	p := runningPod("occupy-0", "n-3")
	p.Spec.Containers[0].Resources.Requests[gt.GPU] = resource.MustParse("2")
	p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "3h"}
	e.SetPod(p, occupy)
	e.Step(now)
	return e, now
}

// queueAffine queues group name of two 2-GPU members, labelled job=name, that require
// the rack of pods labelled key=value by their pod affinity, and returns its key.
func queueAffine(e *engine.Engine, name, key, value string) string {
	g := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: g, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 2})
	for i := range 2 {
		e.SetPod(gt.Pod(fmt.Sprintf("%s-%d", name, i)).GPU(2).Label("job", name).PodAffinity(key, value, "example.com/rack").Obj(), g)
	}
	return g
}

// runLabelled runs group name of one pod, name-0, labelled key=value and asking for no
// GPU, on node.
func runLabelled(e *engine.Engine, name, key, value, node string) {
	g := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: g, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1})
	p := gt.Pod(name+"-0").Label(key, value).Node(node).Obj()
	p.Status.Phase = corev1.PodRunning
	e.SetPod(p, g)
}
