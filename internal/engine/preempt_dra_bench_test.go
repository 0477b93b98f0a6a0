package engine_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// BenchmarkPreemptionForDevices times the decision that preempts for a gang: nodes of
// 8 GPUs each, full with running gangs of 8 one-GPU members of priority 0, and a gang
// of 8 one-GPU members of priority 10 arrives. Each iteration builds the full cluster
// (not timed) and times the one Step that chooses the victims and evicts one gang. The
// GPUs are DRA devices, each member with its own ResourceClaim (dra), or an extended
// resource (extended): the victim search of the first shows each candidate's claims
// deallocated in each trial placement, and their ratio in one run is the cost of that.
func BenchmarkPreemptionForDevices(b *testing.B) {
	for _, nodes := range []int{16, 64} {
		for _, dra := range []bool{false, true} {
			kind := "extended"
			if dra {
				kind = "dra"
			}
			b.Run(fmt.Sprintf("nodes=%d/%s", nodes, kind), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					e, vip, now := fullOfGangs(b, nodes, dra)
					b.StartTimer()
					out := e.Step(now)
					b.StopTimer()
					if len(out.Evictions) != 8 {
						b.Fatalf("%s: evicted %d pods, want one gang of 8", vip, len(out.Evictions))
					}
					b.StartTimer()
				}
			})
		}
	}
}

// fullOfGangs returns an engine of nodes nodes of 8 GPUs, each running a gang of 8
// one-GPU members admitted a minute apart, and a gang of 8 of higher priority queued,
// its key, and the time to step at.
func fullOfGangs(b *testing.B, nodes int, dra bool) (*engine.Engine, string, time.Time) {
	const gpus = 8
	e := sim.NewEngine()
	if dra {
		e.SetObject(gt.DeviceClass())
	}
	for i := range nodes {
		name := fmt.Sprintf("n%03d", i)
		if dra {
			e.SetNode(gt.Node(name).Obj())
			e.SetObject(gt.GPUSlice(name, gpus, "clique-a"))
		} else {
			e.SetNode(gt.Node(name).GPU(gpus).Obj())
		}
	}
	gang := func(name string, priority int32) (string, []*corev1.Pod) {
		if dra {
			key, pods := draGroup(e, name, gpus)
			e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: gpus, Priority: priority})
			return key, pods
		}
		key := "Coscheduling/default/" + name
		e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: gpus, Priority: priority})
		var pods []*corev1.Pod
		for i := range gpus {
			p := gt.Pod(fmt.Sprintf("%s-%d", name, i)).UID(fmt.Sprintf("uid-%s-%d", name, i)).GPU(1).Obj()
			e.SetPod(p, key)
			pods = append(pods, p)
		}
		return key, pods
	}
	now := sim.Epoch
	for i := range nodes {
		key, pods := gang(fmt.Sprintf("g%03d", i), 0)
		if dra {
			runPlanned(b, e, key, pods, "", now)
		} else {
			runBound(b, e, key, pods, now)
		}
		now = now.Add(time.Minute)
	}
	vip, _ := gang("vip", 10)
	return e, vip, now.Add(time.Second)
}

// runBound steps e at now, which must admit group key of pods with one plan, and makes
// the members Running and Ready on the nodes planned.
func runBound(b *testing.B, e *engine.Engine, key string, pods []*corev1.Pod, now time.Time) {
	out := e.Step(now)
	if len(out.Plans) != 1 || len(out.Plans[0].Steps) != len(pods) {
		b.Fatalf("plans %+v, want one of %d members", out.Plans, len(pods))
	}
	for i, st := range out.Plans[0].Steps {
		running := pods[i].DeepCopy()
		if "default/"+running.Name != st.Pod {
			b.Fatalf("step %d places %s, want default/%s", i, st.Pod, running.Name)
		}
		running.Spec.NodeName = st.Node
		running.Status.Phase = corev1.PodRunning
		running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		e.SetPod(running, key)
	}
	e.Step(now)
}
