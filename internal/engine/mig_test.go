package engine_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// migGroup adds a group of one pod, name-0, whose claim (name-0-gpu) asks for count
// partitions of profile, declaring runtime.
func migGroup(e *engine.Engine, name, profile string, count int64, runtime string) (string, []*corev1.Pod) {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1})
	pod := name + "-0"
	claim := gt.MIGClaim("default", pod+"-gpu", profile)
	claim.Spec.Devices.Requests[0].Exactly.Count = count
	e.SetObject(claim)
	p := gt.Pod(pod).UID("uid-"+pod).DeviceClaim("mig", pod+"-gpu").Obj()
	p.Annotations = map[string]string{engine.AnnotationExpectedRuntime: runtime}
	e.SetPod(p, key)
	return key, []*corev1.Pod{p}
}

// TestExpectedStartOfPartitions: one node whose GPU is partitioned MIG-style (seven
// memory slices: gt.MIGSlices). Two 3g partitions run, for an hour and for two; a
// queued group asks for four 1g partitions, which the slice left cannot take, and is
// expected to start in an hour, when the first 3g gives back its three slices. (With
// partitions counted one by one per class, seven 1g looked free, none allocated, and
// it was expected to start at once.)
func TestExpectedStartOfPartitions(t *testing.T) {
	e := sim.NewEngine()
	e.SetNode(gt.Node("n0").Obj())
	for _, p := range gt.MIGProfiles {
		e.SetObject(gt.MIGClass(p.Profile))
	}
	for _, s := range gt.MIGSlices("n0") {
		e.SetObject(s)
	}
	now := sim.Epoch
	for _, run := range []struct{ name, runtime string }{{"one-hour", "1h"}, {"two-hours", "2h"}} {
		key, pods := migGroup(e, run.name, "3g", 1, run.runtime)
		runPlanned(t, e, key, pods, run.runtime, now)
	}
	key, _ := migGroup(e, "four", "1g", 4, "30m")
	now = now.Add(sim.SimForecastEvery)
	st := stepQueued(t, e, now, key, "four admitted while the 3g partitions leave one memory slice")
	if want := sim.Epoch.Add(time.Hour); !st.ExpectedStart.Equal(want) {
		t.Errorf("four: expected start %v (%q), want %v, when the first 3g partition ends", st.ExpectedStart, st.ExpectedStartUnknown, want)
	}
}
