package engine_test

import (
	"testing"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sim"
)

// TestStoppedGroupIsEvictedAndStaysOutOfTheQueue: stopping an admitted group evicts its
// members and lets a waiting group have the node; the stopped group's pods, back again,
// are not bound; resumed, it queues behind.
func TestStoppedGroupIsEvictedAndStaysOutOfTheQueue(t *testing.T) {
	e := sim.NewEngine()
	e.SetNode(gt.Node("n-0").GPU(1).Obj())
	spec := engine.GroupSpec{Key: "Coscheduling/default/a", Source: engine.Coscheduling, Namespace: "default", Name: "a", MinMember: 1}
	e.SetGroup(spec)
	e.SetPod(gt.Pod("a-0").GPU(1).Obj(), spec.Key)
	if out := e.Step(sim.Epoch); len(out.Binds()) != 1 {
		t.Fatalf("binds %+v, want a-0 bound", out.Binds())
	}
	e.SetPod(gt.Pod("a-0").GPU(1).Node("n-0").Obj(), spec.Key)
	e.Step(sim.Epoch)
	b := engine.GroupSpec{Key: "Coscheduling/default/b", Source: engine.Coscheduling, Namespace: "default", Name: "b", MinMember: 1}
	e.SetGroup(b)
	e.SetPod(gt.Pod("b-0").GPU(1).Obj(), b.Key)
	e.Step(sim.Epoch)

	spec.Stopped = true
	e.SetGroup(spec)
	out := e.Step(sim.Epoch)

	if len(out.Evictions) != 1 || out.Evictions[0].Pod != "default/a-0" {
		t.Fatalf("evictions %+v, want a-0 evicted", out.Evictions)
	}
	e.RemovePod("default/a-0")
	e.SetPod(gt.Pod("a-0").GPU(1).Obj(), spec.Key) // its controller creates it again
	out = e.Step(sim.Epoch)
	if len(out.Binds()) != 1 || out.Binds()[0].Group != b.Key {
		t.Fatalf("binds %+v, want only b's member bound", out.Binds())
	}
	if st, _ := e.Group(spec.Key); st.Phase != lifecycle.Stopped {
		t.Errorf("stopped group in phase %s, want Stopped", st.Phase)
	}
	spec.Stopped = false
	e.SetGroup(spec)
	e.Step(sim.Epoch)
	if st, _ := e.Group(spec.Key); st.Phase != lifecycle.Queued {
		t.Errorf("resumed group in phase %s, want Queued (b holds the node)", st.Phase)
	}
}
