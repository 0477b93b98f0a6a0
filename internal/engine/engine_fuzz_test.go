package engine_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// FuzzEngine drives one engine through a cluster and a sequence of events that the fuzzer's
// bytes choose (see fuzzWorld.run): nodes, groups of two sources, members added, made
// Ready, failed, finished, deleted at once or after a grace period, group objects deleted
// and created again under the same name while their pods are there, nodes going NotReady
// or away, other schedulers' pods, quota changes, binds that fail, evictions carried out
// late, and the clock moving on. After every Step it checks what the engine asked for
// against the world's own record of the cluster:
//   - no node is over-committed by muster's binds (every resource of every node);
//   - a bind names an existing, unbound, live member of the group, on an existing node;
//   - a group admitted in a Step holds at least minMember live members once its binds are
//     carried out (members being deleted do not count);
//   - an eviction names a member of the group;
//
// and, over the whole run, that the engine is deterministic: the same bytes give the same
// outputs. A panic fails the target too.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{}) // more seeds in testdata/fuzz/FuzzEngine
	f.Fuzz(func(t *testing.T, data []byte) {
		first := newFuzzWorld(t, data)
		first.run()
		second := newFuzzWorld(t, data)
		second.run()
		if d := cmp.Diff(first.log, second.log); d != "" {
			t.Fatalf("the same events gave different outputs (-first +second):\n%s", d)
		}
	})
}

// fuzzWorld is a cluster as the fuzz target keeps it, beside the engine that schedules it:
// the truth the engine's outputs are checked against.
type fuzzWorld struct {
	t    *testing.T
	data []byte
	e    *engine.Engine
	now  time.Time
	// nodes, pods and groups are the world's objects; pods maps ns/name to the pod.
	nodes  map[string]*corev1.Node
	pods   map[string]*corev1.Pod
	groups map[string]engine.GroupSpec
	// member maps a member pod's key to its group's key.
	member map[string]string
	// unseen holds pods changed in the world whose news the engine has not had yet.
	unseen map[string]bool
	serial int
	log    []string
}

func newFuzzWorld(t *testing.T, data []byte) *fuzzWorld {
	return &fuzzWorld{t: t, data: data, e: sim.NewEngine(), now: sim.Epoch,
		nodes: map[string]*corev1.Node{}, pods: map[string]*corev1.Pod{}, groups: map[string]engine.GroupSpec{},
		member: map[string]string{}, unseen: map[string]bool{}}
}

// next returns the next byte of input, or 0 once it is used up.
func (w *fuzzWorld) next() int {
	if len(w.data) == 0 {
		return 0
	}
	b := w.data[0]
	w.data = w.data[1:]
	return int(b)
}

// run builds the nodes, then plays the events, stepping the engine as told and at the end.
func (w *fuzzWorld) run() {
	for i := range 1 + w.next()%5 {
		name := fmt.Sprintf("n-%d", i)
		w.nodes[name] = gt.Node(name).GPU(int64(w.next()%5)).CPU("8").Label("zone", fmt.Sprintf("z%d", i%2)).Obj()
		w.e.SetNode(w.nodes[name])
	}
	for steps := 0; len(w.data) > 0 && steps < 200; steps++ {
		w.event(w.next() % 14)
	}
	w.flush()
	w.step()
}

// event carries out one kind of event, reading its details from the input.
func (w *fuzzWorld) event(kind int) {
	switch kind {
	case 0:
		w.newGroup()
	case 1:
		if keys := sortedKeys(w.groups); len(keys) > 0 {
			w.newMember(keys[w.next()%len(keys)], w.next()%3)
		}
	case 2:
		if p := w.pick(); p != nil {
			w.deletePod(p)
		}
	case 3:
		if p := w.pick(); p != nil && p.DeletionTimestamp == nil {
			p.DeletionTimestamp = &metav1.Time{Time: w.now}
			w.changed(p)
		}
	case 4, 5, 6:
		w.setPhase(kind)
	case 7:
		w.changeNode()
	case 8:
		w.now = w.now.Add(time.Duration(w.next()) * 10 * time.Second)
	case 9:
		w.flush()
		w.step()
	case 10:
		if keys := sortedKeys(w.groups); len(keys) > 0 {
			key := keys[w.next()%len(keys)]
			spec := w.groups[key]
			delete(w.groups, key)
			w.e.RemoveGroup(key)
			// Every other time, an object of the same name comes at once, while the old
			// members are still there, before or after the engine's next Step.
			if spec.Source != engine.Labels && w.next()%2 == 0 {
				if w.next()%2 == 0 {
					w.flush()
					w.step()
				}
				w.groups[key] = spec
				w.e.SetGroup(spec)
			}
		}
	case 11:
		w.otherPod()
	case 12:
		w.flush()
	case 13:
		var quota cluster.Resources
		if n := w.next() % 9; n > 0 {
			quota = cluster.Resources{gt.GPU: int64(n)}
		}
		w.e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default", Quota: quota}})
	}
}

// newGroup creates a group object and its first members.
func (w *fuzzWorld) newGroup() {
	w.serial++
	src := []engine.Source{engine.Coscheduling, engine.Labels}[w.next()%2]
	name := fmt.Sprintf("g%d", w.serial)
	spec := engine.GroupSpec{Key: fmt.Sprintf("%s/default/%s", src, name), Source: src, Namespace: "default", Name: name,
		MinMember: 1 + w.next()%4, Priority: int32(w.next() % 3)}
	if w.next()%4 == 0 {
		spec.Topology = placement.Topology{Required: "zone"}
	}
	// Every third group of two or more needs a member of task a, which every third
	// member is (see newMember). Neither reads the input, so that the corpus's inputs
	// still build the worlds they were found with.
	if w.serial%3 == 0 && spec.MinMember >= 2 {
		spec.TaskMinimums = map[string]int{"a": 1}
	}
	w.groups[spec.Key] = spec
	w.e.SetGroup(spec)
	gpus := w.next() % 3
	for range w.next() % 5 {
		w.newMember(spec.Key, gpus)
	}
}

// newMember creates a pod of group key requesting gpus GPUs (a CPU when gpus is 0).
func (w *fuzzWorld) newMember(key string, gpus int) {
	w.serial++
	spec := w.groups[key]
	b := gt.Pod(fmt.Sprintf("%s-%d", spec.Name, w.serial))
	if gpus > 0 {
		b = b.GPU(int64(gpus))
	} else {
		b = b.Req(corev1.ResourceCPU, "1")
	}
	p := b.Obj()
	p.UID, p.Generation = types.UID(fmt.Sprint("uid-", w.serial)), 1
	p.Annotations = map[string]string{engine.TaskAnnotation: "b"}
	if w.serial%3 == 0 {
		p.Annotations[engine.TaskAnnotation] = "a"
	}
	w.pods[cluster.PodKey(p)] = p
	w.member[cluster.PodKey(p)] = key
	w.changed(p)
}

// otherPod binds another scheduler's pod where it fits, as the world's record says.
func (w *fuzzWorld) otherPod() {
	w.serial++
	p := gt.Pod(fmt.Sprintf("other-%d", w.serial)).GPU(int64(1 + w.next()%2)).Obj()
	p.UID, p.Spec.SchedulerName = types.UID(fmt.Sprint("uid-", w.serial)), "default-scheduler"
	names := sortedKeys(w.nodes)
	if len(names) == 0 {
		return
	}
	node := names[w.next()%len(names)]
	if w.overCommits(node, p) != "" {
		return
	}
	p.Spec.NodeName = node
	w.pods[cluster.PodKey(p)] = p
	w.changed(p)
}

// pick returns a pod chosen by the input, or nil when there is none.
func (w *fuzzWorld) pick() *corev1.Pod {
	keys := sortedKeys(w.pods)
	if len(keys) == 0 {
		return nil
	}
	return w.pods[keys[w.next()%len(keys)]]
}

// setPhase makes a bound pod Ready (4), Failed (5) or Succeeded (6).
func (w *fuzzWorld) setPhase(kind int) {
	p := w.pick()
	if p == nil || p.Spec.NodeName == "" || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return
	}
	switch kind {
	case 4:
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	case 5:
		p.Status.Phase, p.Status.Conditions = corev1.PodFailed, nil
	case 6:
		p.Status.Phase, p.Status.Conditions = corev1.PodSucceeded, nil
	}
	w.changed(p)
}

// changeNode turns a node NotReady or Ready again, or removes it.
func (w *fuzzWorld) changeNode() {
	names := sortedKeys(w.nodes)
	if len(names) == 0 {
		return
	}
	name := names[w.next()%len(names)]
	if w.next()%4 == 0 {
		delete(w.nodes, name)
		w.e.RemoveNode(name)
		return
	}
	n := w.nodes[name].DeepCopy()
	if n.Status.Conditions[0].Status == corev1.ConditionTrue {
		n.Status.Conditions[0].Status = corev1.ConditionFalse
	} else {
		n.Status.Conditions[0].Status = corev1.ConditionTrue
	}
	w.nodes[name] = n
	w.e.SetNode(n)
}

// changed records that the engine has yet to see p's new version.
func (w *fuzzWorld) changed(p *corev1.Pod) { w.unseen[cluster.PodKey(p)] = true }

// deletePod removes a pod from the world and tells the engine at once.
func (w *fuzzWorld) deletePod(p *corev1.Pod) {
	key := cluster.PodKey(p)
	delete(w.pods, key)
	delete(w.member, key)
	delete(w.unseen, key)
	w.e.RemovePod(key)
}

// flush gives the engine the pods it has not seen, in key order.
func (w *fuzzWorld) flush() {
	for _, key := range sortedKeys(w.unseen) {
		if p := w.pods[key]; p != nil {
			w.e.SetPod(p.DeepCopy(), w.member[key])
		}
	}
	clear(w.unseen)
}

// sortedKeys returns m's keys in order, so that the input picks the same one each run.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
