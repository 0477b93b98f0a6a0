package engine_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// draEngine is an engine over 2 nodes with 2 DRA GPUs each.
func draEngine() *engine.Engine {
	e := sim.NewEngine()
	for _, n := range []string{"n0", "n1"} {
		e.SetNode(gt.Node(n).Obj())
		e.SetObject(gt.GPUSlice(n, 2, "clique-a"))
	}
	e.SetObject(gt.DeviceClass())
	return e
}

// draGroup adds a group of n workers, each with its own one-GPU claim.
func draGroup(e *engine.Engine, name string, n int) (string, []*corev1.Pod) {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: n})
	var pods []*corev1.Pod
	for i := range n {
		pod := fmt.Sprintf("%s-%d", name, i)
		e.SetObject(gt.GPUClaim("default", pod+"-gpu", 1))
		p := gt.Pod(pod).UID("uid-"+pod).DeviceClaim("gpu", pod+"-gpu").Obj()
		e.SetPod(p, key)
		pods = append(pods, p)
	}
	return key, pods
}

// TestPlanAllocatesClaims: a gang's plan carries each member's claim allocation, the
// devices stay taken for the next group while the binds are in flight, a failed bind
// gives its member's device back (and its replacement takes one), and once the gang's pods and allocations are gone the
// next group is admitted.
func TestPlanAllocatesClaims(t *testing.T) {
	e := draEngine()
	now := sim.Epoch
	_, pods := draGroup(e, "a", 3)
	out := e.Step(now)
	if len(out.Plans) != 1 || len(out.Plans[0].Steps) != 3 {
		t.Fatalf("plans %+v", out.Plans)
	}
	for _, st := range out.Plans[0].Steps {
		if len(st.Claims) != 1 || st.Claims[0].Allocation == nil {
			t.Fatalf("step %+v has no allocation", st)
		}
	}
	// Three GPUs asked, one left: the second group waits while a's binds are in flight.
	draGroup(e, "b", 3)
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 0 {
		t.Fatalf("b admitted on devices a holds: %+v", out.Plans)
	}
	// One of a's binds fails: its claim is shown unallocated again and a places it anew.
	failed := out.Plans[0].Steps[2]
	e.BindFailed(failed.Pod)
	if c := e.Snapshot().ResourceClaim("default/a-2-gpu"); c.Status.Allocation != nil {
		t.Fatalf("failed bind kept its claim allocated: %+v", c.Status)
	}
	now = now.Add(time.Second)
	re := e.Step(now)
	if len(re.Plans) != 1 || re.Plans[0].Group != "Coscheduling/default/a" || len(re.Plans[0].Steps[0].Claims) != 1 {
		t.Fatalf("replacement plans %+v", re.Plans)
	}
	// a ends: its pods are deleted and the resourceclaim controller deallocates.
	for _, p := range pods {
		e.RemovePod("default/" + p.Name)
		e.SetObject(gt.GPUClaim("default", p.Name+"-gpu", 1))
	}
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 1 || out.Plans[0].Group != "Coscheduling/default/b" {
		t.Fatalf("after a ended: plans %+v", out.Plans)
	}
}

// TestQuotaByDeviceClass: a queue's quota of 3 gpu.nvidia.com devices admits a gang of 2
// one-device claims and holds back a second one (QuotaExceeded) on a cluster with room
// for both; when the first gang's pods are gone the second is admitted.
func TestQuotaByDeviceClass(t *testing.T) {
	e := draEngine()
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default", Quota: cluster.Resources{gt.GPUClass: 3}}})
	now := sim.Epoch
	_, pods := draGroup(e, "a", 2)
	if out := e.Step(now); len(out.Plans) != 1 {
		t.Fatalf("a: plans %+v", out.Plans)
	}
	b, _ := draGroup(e, "b", 2)
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 0 {
		t.Fatalf("b admitted past the device quota: %+v", out.Plans)
	}
	st, _ := e.Group(b)
	if st.Wait == nil || st.Wait.Kind != queue.QuotaExceeded {
		t.Fatalf("b waits for %+v, want %s", st.Wait, queue.QuotaExceeded)
	}
	for _, p := range pods {
		e.RemovePod("default/" + p.Name)
		e.SetObject(gt.GPUClaim("default", p.Name+"-gpu", 1))
	}
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Plans) != 1 || out.Plans[0].Group != b {
		t.Fatalf("after a ended: plans %+v", out.Plans)
	}
}
