package engine_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
)

// podsJob drives one group of one-GPU pods through the engine as the controller would,
// with an owner that creates the pods again, with new UIDs, after muster evicts them:
// binds are carried out (the pods are bound, never Ready) and evictions delete the pods.
type podsJob struct {
	t    *testing.T
	e    *engine.Engine
	now  time.Time
	spec engine.GroupSpec
	pods []string
	// generation counts the pods' incarnations: each has new UIDs.
	generation int
	// gone, if set, is told of each pod an eviction deleted.
	gone func(pod string)
}

func (j *podsJob) uid(pod string) types.UID {
	return types.UID(fmt.Sprintf("%s-gen-%d", pod, j.generation))
}

// createPods creates the pods (again), unbound.
func (j *podsJob) createPods() {
	j.generation++
	for _, name := range j.pods {
		p := gt.Pod(name).GPU(1).Obj()
		p.UID = j.uid(name)
		j.e.SetPod(p, j.spec.Key)
	}
}

// step advances the clock by d and steps the engine, carrying out its binds and
// evictions.
func (j *podsJob) step(d time.Duration) engine.Output {
	j.now = j.now.Add(d)
	out := j.e.Step(j.now)
	for _, b := range out.Binds() {
		name := b.Pod[len("default/"):]
		p := gt.Pod(name).GPU(1).Node(b.Node).Obj()
		p.UID = j.uid(name)
		p.Status.Phase = corev1.PodRunning
		j.e.SetPod(p, j.spec.Key)
	}
	for _, ev := range out.Evictions {
		j.e.RemovePod(ev.Pod)
		if j.gone != nil {
			j.gone(ev.Pod[len("default/"):])
		}
	}
	return out
}

// status returns the group's status, failing if the engine forgot the group.
func (j *podsJob) status(when string) engine.Status {
	j.t.Helper()
	st, ok := j.e.Group(j.spec.Key)
	if !ok {
		j.t.Fatalf("%s: the engine forgot the group", when)
	}
	return st
}
