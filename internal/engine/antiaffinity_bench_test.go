package engine_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// BenchmarkForecastWithAntiAffinity: 1,000 nodes of 8 GPUs, each running one 8-GPU pod
// of its own group (expected to end between 1 h and 3.8 h), and 300 gangs of two 8-GPU
// members queued. Each iteration a queued member changes and the engine steps past
// ForecastEvery: a whole forecast of the first 256 groups. With anti=true every pod, running
// or queued, has required anti-affinity against the others by hostname (exclusive nodes,
// as a JobSet's exclusive placement asks): each queued member is kept off every node until
// its pod ends (Group.From). ns/op is the time per step, the forecast's most of it.
func BenchmarkForecastWithAntiAffinity(b *testing.B) {
	for _, anti := range []bool{false, true} {
		b.Run(fmt.Sprintf("anti=%v", anti), func(b *testing.B) { benchForecast(b, anti) })
	}
}

func benchForecast(b *testing.B, anti bool) {
	const nodes, queued = 1000, 300
	e := engine.New(engine.Config{DefaultQueue: "default", Policy: lifecycle.DefaultPolicy(),
		StarvationThreshold: 10 * time.Minute, ForecastEvery: time.Second})
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default"}})
	for _, n := range gt.Nodes("n", nodes, func(nb *gt.NodeBuilder) *gt.NodeBuilder { return nb.GPU(8) }) {
		e.SetNode(n)
	}
	pod := func(name string, seconds int64) *corev1.Pod {
		p := gt.Pod(name).GPU(8).Label("app", "train")
		if anti {
			p = p.AntiAffinity("app", "train", corev1.LabelHostname)
		}
		obj := p.Obj()
		obj.Spec.ActiveDeadlineSeconds = &seconds
		return obj
	}
	for i := range nodes {
		name := fmt.Sprintf("r%04d", i)
		key := "Coscheduling/default/" + name
		e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1})
		p := pod(name+"-0", int64(3600+10*i))
		p.Spec.NodeName = fmt.Sprintf("n-%d", i)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		e.SetPod(p, key)
	}
	now := sim.Epoch
	e.Step(now)
	for i := range queued {
		name := fmt.Sprintf("w%04d", i)
		key := "Coscheduling/default/" + name
		e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 2})
		for m := range 2 {
			e.SetPod(pod(fmt.Sprintf("%s-%d", name, m), 1800), key)
		}
	}
	now = now.Add(time.Second)
	e.Step(now)
	if st, _ := e.Group("Coscheduling/default/w0000"); st.ExpectedStart.IsZero() {
		b.Fatalf("the first queued gang has no expected start: %s", st.ExpectedStartUnknown)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("w%04d", i%queued)
		e.SetPod(pod(name+"-0", int64(1800+i%7)), "Coscheduling/default/"+name)
		now = now.Add(2 * time.Second)
		if out := e.Step(now); len(out.Binds()) != 0 {
			b.Fatalf("a full cluster bound %d pods", len(out.Binds()))
		}
	}
}
