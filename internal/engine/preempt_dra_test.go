package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// TestPreemptionForDevices: on 2 nodes of 2 DRA GPUs each, two gangs of priority 0 hold
// all four devices through one-GPU claims. A gang of priority 10 needing two devices
// evicts one of them, counting on the devices its claims give back once its pods are
// gone: the younger, unless one of its claims is shared with a pod that stays (then
// evicting it frees one device, and the older is evicted instead). While the victim's
// claims are still allocated (the resourceclaim controller has not deallocated them
// yet) the preemption stays in flight: nothing more is evicted and nothing bound. Once
// they are deallocated the gang is admitted.
func TestPreemptionForDevices(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shared bool
		victim string
	}{
		{"the younger gang", false, "young"},
		{"a claim shared with a pod that stays", true, "old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := draEngine()
			now := sim.Epoch
			runDRAGang(t, e, "old", 2, "", now)
			now = now.Add(time.Minute)
			runDRAGang(t, e, "young", 2, "", now)
			if tc.shared {
				c := e.Snapshot().ResourceClaim("default/young-0-gpu").DeepCopy()
				c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{
					Resource: "pods", Name: "monitor", UID: "uid-monitor"})
				e.SetObject(c)
			}

			vip, pods := draGroup(e, "vip", 2)
			e.SetGroup(engine.GroupSpec{Key: vip, Source: engine.Coscheduling, Namespace: "default", Name: "vip", MinMember: 2, Priority: 10})
			now = now.Add(time.Second)
			out := e.Step(now)
			var evicted []string
			for _, ev := range out.Evictions {
				evicted = append(evicted, ev.Pod)
			}
			slices.Sort(evicted)
			if want := []string{"default/" + tc.victim + "-0", "default/" + tc.victim + "-1"}; !slices.Equal(evicted, want) {
				t.Fatalf("evicted %v, want %v", evicted, want)
			}

			// The victim's pods are gone; its claims are still allocated.
			for _, p := range evicted {
				e.RemovePod(p)
			}
			now = now.Add(time.Second)
			if out := e.Step(now); len(out.Evictions) != 0 || len(out.Plans) != 0 {
				t.Fatalf("while the victim's claims are allocated: evictions %+v, plans %+v; want none", out.Evictions, out.Plans)
			}
			st, _ := e.Group(vip)
			if len(st.Preempting) != 1 {
				t.Errorf("vip's status: want its preemption in flight, found %v (waiting: %s)", st.Preempting, st.Waiting)
			}
			want := "2 of their ResourceClaims not deallocated yet: default/" + tc.victim + "-0-gpu, default/" + tc.victim + "-1-gpu"
			if !strings.Contains(st.Waiting, want) {
				t.Errorf("vip's status says %q, want it to name the claims: %q", st.Waiting, want)
			}
			// A claim reserved for a new consumer (the victim's replacement pod, placed
			// elsewhere) is no longer the victim's: the preemption waits for the other.
			c := e.Snapshot().ResourceClaim("default/" + tc.victim + "-0-gpu").DeepCopy()
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "new", UID: "uid-new"}}
			e.SetObject(c)
			now = now.Add(time.Second)
			if out := e.Step(now); len(out.Evictions) != 0 || len(out.Plans) != 0 {
				t.Fatalf("with one claim taken by a new consumer: evictions %+v, plans %+v; want none", out.Evictions, out.Plans)
			}
			st, _ = e.Group(vip)
			want = "1 of their ResourceClaims not deallocated yet: default/" + tc.victim + "-1-gpu"
			if !strings.Contains(st.Waiting, want) {
				t.Errorf("vip's status says %q, want %q", st.Waiting, want)
			}

			// The resourceclaim controller deallocates them.
			for _, p := range evicted {
				e.SetObject(gt.GPUClaim("default", p[len("default/"):]+"-gpu", 1))
			}
			now = now.Add(time.Second)
			out = e.Step(now)
			if len(out.Plans) != 1 || out.Plans[0].Group != vip {
				t.Fatalf("once the claims are deallocated: plans %+v, want vip's", out.Plans)
			}
			onePlan(t, out, len(pods))
		})
	}
}

// TestPreemptionForExtendedResourcesByDRA: on 2 nodes of 2 DRA GPUs each, whose
// DeviceClass provides nvidia.com/gpu, two gangs of priority 0 hold all four devices
// through the claims made for their nvidia.com/gpu requests. A gang of priority 10
// asking for two evicts the younger, counting on the devices its claims give back; it
// waits while they are allocated (the pods are gone, the claims not yet), and is
// admitted once they are deleted with their pods.
func TestPreemptionForExtendedResourcesByDRA(t *testing.T) {
	e := draEngine()
	e.SetObject(gpuExtendedClass())
	now := sim.Epoch
	runExtendedGang(t, e, "old", 2, "", now)
	now = now.Add(time.Minute)
	runExtendedGang(t, e, "young", 2, "", now)
	young := []*resourcev1.ResourceClaim{}
	for _, c := range e.Snapshot().Objects().ResourceClaims {
		if strings.HasPrefix(c.Name, "young-") {
			young = append(young, c)
		}
	}
	vip, _ := extendedGang(e, "vip", 2, "")
	e.SetGroup(engine.GroupSpec{Key: vip, Source: engine.Coscheduling, Namespace: "default", Name: "vip", MinMember: 2, Priority: 10})
	now = now.Add(time.Second)
	var evicted []string
	for _, ev := range e.Step(now).Evictions {
		evicted = append(evicted, ev.Pod)
	}
	slices.Sort(evicted)
	if want := []string{"default/young-0", "default/young-1"}; !slices.Equal(evicted, want) || len(young) != 2 {
		t.Fatalf("evicted %v, want %v (young's claims: %d)", evicted, want, len(young))
	}
	for _, p := range evicted {
		e.RemovePod(p)
	}
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Evictions) != 0 || len(out.Plans) != 0 {
		t.Fatalf("while the victim's claims are allocated: evictions %+v, plans %+v; want none", out.Evictions, out.Plans)
	}
	for _, c := range young {
		e.RemoveObject(c)
	}
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 1 || out.Plans[0].Group != vip {
		t.Fatalf("once the claims are gone: plans %+v, want vip's", out.Plans)
	}
}

// runClaimGroup admits a group of one member whose claim asks for gpus devices at now,
// writes the claim's allocation and makes the member Running and Ready on its node.
func runClaimGroup(t *testing.T, e *engine.Engine, name string, gpus int64, now time.Time) {
	t.Helper()
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1})
	e.SetObject(gt.GPUClaim("default", name+"-gpu", gpus))
	pod := gt.Pod(name).UID("uid-"+name).DeviceClaim("gpu", name+"-gpu").Obj()
	e.SetPod(pod, key)
	runPlanned(t, e, key, []*corev1.Pod{pod}, "", now)
}

// TestPreemptionFreesTheFewestDevices: on 2 nodes of 2 DRA GPUs each, a group holding
// both GPUs of one node through one claim (the youngest) and two groups of one GPU each
// fill the cluster. A group of priority 10 needing one GPU could evict any one of them;
// it evicts the younger one-GPU group, which frees what it needs and no more, not the
// two-GPU group that the order of value alone would pick.
func TestPreemptionFreesTheFewestDevices(t *testing.T) {
	e := draEngine()
	now := sim.Epoch
	for _, g := range []struct {
		name string
		gpus int64
	}{{"solo", 1}, {"other", 1}, {"pair", 2}} {
		runClaimGroup(t, e, g.name, g.gpus, now)
		now = now.Add(time.Minute)
	}
	vip, _ := draGroup(e, "vip", 1)
	e.SetGroup(engine.GroupSpec{Key: vip, Source: engine.Coscheduling, Namespace: "default", Name: "vip", MinMember: 1, Priority: 10})
	out := e.Step(now)
	if len(out.Evictions) != 1 || out.Evictions[0].Pod != "default/other" {
		t.Fatalf("evictions %+v, want the one-GPU group admitted last, other", out.Evictions)
	}
}
