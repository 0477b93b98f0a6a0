package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// TestPreemptionForDevices: on 2 nodes of 2 DRA GPUs each, two gangs of priority 0 hold
// all four devices through one-GPU claims. A gang of priority 10 needing two devices
// evicts one of them, the younger, counting on the devices its claims give back once its
// pods are gone. While the victim's claims are still allocated (the resourceclaim
// controller has not deallocated them yet) the preemption stays in flight: nothing more
// is evicted and nothing bound. Once they are deallocated the gang is admitted.
func TestPreemptionForDevices(t *testing.T) {
	e := draEngine()
	now := sim.Epoch
	runDRAGang(t, e, "old", 2, "", now)
	now = now.Add(time.Minute)
	runDRAGang(t, e, "young", 2, "", now)

	vip, pods := draGroup(e, "vip", 2)
	e.SetGroup(engine.GroupSpec{Key: vip, Source: engine.Coscheduling, Namespace: "default", Name: "vip", MinMember: 2, Priority: 10})
	now = now.Add(time.Second)
	out := e.Step(now)
	var evicted []string
	for _, ev := range out.Evictions {
		evicted = append(evicted, ev.Pod)
	}
	slices.Sort(evicted)
	if want := []string{"default/young-0", "default/young-1"}; !slices.Equal(evicted, want) {
		t.Fatalf("evicted %v, want %v: the younger gang's devices make room", evicted, want)
	}

	// The victim's pods are gone; its claims are still allocated.
	for _, p := range evicted {
		e.RemovePod(p)
	}
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Evictions) != 0 || len(out.Plans) != 0 {
		t.Fatalf("while the victim's claims are allocated: evictions %+v, plans %+v; want none", out.Evictions, out.Plans)
	}
	if st, _ := e.Group(vip); len(st.Preempting) != 1 {
		t.Errorf("vip's status: want its preemption of young in flight, found %v (waiting: %s)", st.Preempting, st.Waiting)
	}

	// The resourceclaim controller deallocates them.
	for _, name := range []string{"young-0-gpu", "young-1-gpu"} {
		e.SetObject(gt.GPUClaim("default", name, 1))
	}
	now = now.Add(time.Second)
	out = e.Step(now)
	if len(out.Plans) != 1 || out.Plans[0].Group != vip {
		t.Fatalf("once the claims are deallocated: plans %+v, want vip's", out.Plans)
	}
	onePlan(t, out, len(pods))
	if st, _ := e.Group("Coscheduling/default/old"); len(st.Preempting) != 0 || st.Phase != "Running" {
		t.Errorf("old: want it spared and Running, found %s", st.Phase)
	}
}
