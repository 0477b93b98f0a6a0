package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// TestPassesOfChangesAgreeWithFullPasses: an engine whose admission passes report only
// the waiting groups whose reason changed (the default) and one that decides and reports
// every waiting group on every pass are given the same random cluster, queues, groups
// (gangs and singles of several shapes, with and without declared run times) and events
// (pods finishing, nodes going NotReady and back, groups cancelled, the clock moving
// past the starvation threshold); after every Step their Outputs and every group's
// Status are the same. Over all runs, the first engine must have left groups unreported.
func TestPassesOfChangesAgreeWithFullPasses(t *testing.T) {
	skipped := 0
	rapid.Check(t, func(rt *rapid.T) {
		w := newTwinWorld(rt)
		for range rapid.IntRange(1, 150).Draw(rt, "events") {
			w.event()
		}
		w.step()
		skipped += engine.Skipped(w.engines[0])
	})
	if skipped == 0 {
		t.Fatal("no pass left a waiting group unreported: the passes of changes were not exercised")
	}
	t.Logf("waiting groups left unreported as unchanged, over all runs: %d", skipped)
}

// twinWorld is a cluster that two engines schedule: what the first asks for is carried
// out on both, after checking that the second asked for the same.
type twinWorld struct {
	rt      *rapid.T
	engines [2]*engine.Engine
	now     time.Time
	nodes   map[string]*corev1.Node
	pods    map[string]*corev1.Pod
	member  map[string]string
	groups  []string
	serial  int
}

func newTwinWorld(rt *rapid.T) *twinWorld {
	starve := rapid.SampledFrom([]time.Duration{0, time.Minute, 10 * time.Minute}).Draw(rt, "starvation")
	w := &twinWorld{rt: rt, now: sim.Epoch, nodes: map[string]*corev1.Node{}, pods: map[string]*corev1.Pod{},
		member: map[string]string{}}
	for i := range w.engines {
		w.engines[i] = sim.NewEngineWith(starve)
	}
	engine.FullPasses(w.engines[1])
	if rapid.Bool().Draw(rt, "second queue") {
		quota := cluster.Resources{gt.GPU: int64(rapid.IntRange(1, 8).Draw(rt, "quota"))}
		w.each(func(e *engine.Engine) {
			e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "capped", Quota: quota, Weight: 2}})
		})
	}
	for i := range rapid.IntRange(1, 6).Draw(rt, "nodes") {
		name := fmt.Sprintf("n-%d", i)
		n := gt.Node(name).GPU(int64(rapid.IntRange(1, 4).Draw(rt, "gpus"))).CPU("8").Label("zone", fmt.Sprintf("z%d", i%2)).Obj()
		w.nodes[name] = n
		w.each(func(e *engine.Engine) { e.SetNode(n.DeepCopy()) })
	}
	return w
}

func (w *twinWorld) each(f func(e *engine.Engine)) {
	for _, e := range w.engines {
		f(e)
	}
}

// event plays one event the input chooses.
func (w *twinWorld) event() {
	switch rapid.IntRange(0, 9).Draw(w.rt, "event") {
	case 0, 1, 2:
		w.newGroup()
	case 3, 4:
		w.finishPod()
	case 5:
		w.now = w.now.Add(rapid.SampledFrom([]time.Duration{time.Second, 30 * time.Second, 5 * time.Minute, time.Hour}).Draw(w.rt, "tick"))
	case 6:
		w.toggleNode()
	case 7:
		if len(w.groups) > 0 {
			key := rapid.SampledFrom(w.groups).Draw(w.rt, "cancel")
			w.each(func(e *engine.Engine) { e.RemoveGroup(key) })
		}
	default:
		w.step()
	}
}

// newGroup adds a group of 1 to 4 members of one shape, some with a declared run time.
func (w *twinWorld) newGroup() {
	w.serial++
	name := fmt.Sprintf("g%03d", w.serial)
	members := rapid.IntRange(1, 4).Draw(w.rt, "members")
	spec := engine.GroupSpec{Key: "Coscheduling/default/" + name, Source: engine.Coscheduling, Namespace: "default",
		Name: name, MinMember: rapid.IntRange(1, members).Draw(w.rt, "min"),
		ExpectedRuntime: rapid.SampledFrom([]time.Duration{0, time.Minute, 20 * time.Minute, 3 * time.Hour}).Draw(w.rt, "runtime"),
		Priority:        int32(rapid.SampledFrom([]int{0, 0, 0, 0, 1}).Draw(w.rt, "priority"))}
	if rapid.IntRange(0, 3).Draw(w.rt, "queue") == 0 {
		spec.Queue = "capped"
	}
	if rapid.IntRange(0, 4).Draw(w.rt, "topology") == 0 {
		spec.Topology = placement.Topology{Required: "zone"}
	}
	gpus := rapid.IntRange(0, 3).Draw(w.rt, "gpus")
	w.groups = append(w.groups, spec.Key)
	w.each(func(e *engine.Engine) { e.SetGroup(spec) })
	for i := range members {
		b := gt.Pod(fmt.Sprintf("%s-%d", name, i))
		if gpus > 0 {
			b = b.GPU(int64(gpus))
		} else {
			b = b.Req(corev1.ResourceCPU, "1")
		}
		p := b.Obj()
		p.UID, p.Generation = types.UID(name+fmt.Sprint(i)), 1
		w.setPod(p, spec.Key)
	}
}

func (w *twinWorld) setPod(p *corev1.Pod, group string) {
	key := cluster.PodKey(p)
	w.pods[key], w.member[key] = p, group
	w.each(func(e *engine.Engine) { e.SetPod(p.DeepCopy(), group) })
}

// finishPod makes a bound pod Ready and Running, or Succeeded if it was.
func (w *twinWorld) finishPod() {
	var bound []string
	for _, key := range sortedKeys(w.pods) {
		if p := w.pods[key]; p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded {
			bound = append(bound, key)
		}
	}
	if len(bound) == 0 {
		return
	}
	p := w.pods[rapid.SampledFrom(bound).Draw(w.rt, "pod")].DeepCopy()
	if p.Status.Phase == corev1.PodRunning {
		p.Status.Phase, p.Status.Conditions = corev1.PodSucceeded, nil
	} else {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	w.setPod(p, w.member[cluster.PodKey(p)])
}

// toggleNode turns a node NotReady, or Ready again.
func (w *twinWorld) toggleNode() {
	name := rapid.SampledFrom(sortedKeys(w.nodes)).Draw(w.rt, "node")
	n := w.nodes[name].DeepCopy()
	if n.Status.Conditions[0].Status == corev1.ConditionTrue {
		n.Status.Conditions[0].Status = corev1.ConditionFalse
	} else {
		n.Status.Conditions[0].Status = corev1.ConditionTrue
	}
	w.nodes[name] = n
	w.each(func(e *engine.Engine) { e.SetNode(n.DeepCopy()) })
}

// step steps both engines, compares what they asked for and what they say of every
// group, and carries out the binds and evictions.
func (w *twinWorld) step() {
	var outs [2]engine.Output
	for i, e := range w.engines {
		outs[i] = e.Step(w.now)
		slices.Sort(outs[i].Changed) // listed in no particular order
	}
	if d := cmp.Diff(outs[1], outs[0]); d != "" {
		w.rt.Fatalf("at %s the Outputs differ (-full passes +passes of changes):\n%s", w.now.Sub(sim.Epoch), d)
	}
	keys := w.engines[1].Groups()
	if got := w.engines[0].Groups(); !slices.Equal(keys, got) {
		w.rt.Fatalf("groups differ: full passes %v, passes of changes %v", keys, got)
	}
	for _, key := range keys {
		want, _ := w.engines[1].Group(key)
		got, _ := w.engines[0].Group(key)
		want.Wait, got.Wait = nil, nil // the same reason, computed for another group of its class
		if d := cmp.Diff(want, got); d != "" {
			w.rt.Fatalf("at %s the status of %s differs (-full passes +passes of changes):\n%s", w.now.Sub(sim.Epoch), key, d)
		}
	}
	for _, b := range outs[0].Binds() {
		p := w.pods[b.Pod].DeepCopy()
		p.Spec.NodeName = b.Node
		w.setPod(p, b.Group)
	}
	for _, ev := range outs[0].Evictions {
		delete(w.pods, ev.Pod)
		delete(w.member, ev.Pod)
		w.each(func(e *engine.Engine) { e.RemovePod(ev.Pod) })
	}
}
