package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// BenchmarkDecisionAtDepth: 1,000 nodes of 8 GPUs, full with 8,000 running one-GPU
// groups, and 1,000 or 10,000 one-GPU groups queued. Each iteration a running pod
// finishes and the engine steps: it admits exactly one queued group. ns/op is the time
// per decision; the two depths show how it grows with the queue. The mixed runs queue a
// gang of 8 one-GPU members every 20 groups (500 gangs in 10,000): they never fit one
// free GPU, so every decision passes over gangs that cannot fit now.
func BenchmarkDecisionAtDepth(b *testing.B) {
	for _, queued := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) { benchDecision(b, queued, 0) })
	}
	for _, queued := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("mixed/queued=%d", queued), func(b *testing.B) { benchDecision(b, queued, 20) })
	}
}

// waitingGang adds a group of members unbound members of one GPU each.
func waitingGang(e *engine.Engine, name string, members int) {
	key := "Coscheduling/default/" + name
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: members})
	for i := range members {
		e.SetPod(gt.Pod(fmt.Sprintf("%s-%d", name, i)).GPU(1).Obj(), key)
	}
}

// benchDecision runs the benchmark with queued groups queued, one in gangEvery of them
// a gang of 8 (none when gangEvery is 0).
func benchDecision(b *testing.B, queued, gangEvery int) {
	const nodes, gpus = 1000, 8
	e := sim.NewEngine()
	for _, n := range gt.Nodes("n", nodes, func(nb *gt.NodeBuilder) *gt.NodeBuilder { return nb.GPU(gpus) }) {
		e.SetNode(n)
	}
	now := sim.Epoch
	var running []string
	for i := range nodes * gpus {
		name := fmt.Sprintf("r%05d", i)
		runningGroup(e, name, fmt.Sprintf("n-%d", i%nodes), 0)
		running = append(running, "default/"+name+"-0")
	}
	e.Step(now)
	for i := range queued {
		if gangEvery > 0 && i%gangEvery == 0 {
			waitingGang(e, fmt.Sprintf("w%05d", i), 8)
			continue
		}
		waitingGroup(e, fmt.Sprintf("w%05d", i), 0, false)
	}
	now = now.Add(time.Second)
	if out := e.Step(now); len(out.Binds()) != 0 {
		b.Fatalf("a full cluster bound %d pods", len(out.Binds()))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i >= len(running) {
			b.Fatalf("ran out of running pods after %d decisions", i)
		}
		e.RemovePod(running[i])
		now = now.Add(time.Second)
		out := e.Step(now)
		if len(out.Binds()) != 1 {
			b.Fatalf("decision %d: %d binds, want 1", i, len(out.Binds()))
		}
		b.StopTimer()
		bound := out.Binds()[0]
		e.SetPod(runningPod(bound.Pod[len("default/"):], bound.Node), bound.Group)
		e.Step(now)
		b.StartTimer()
	}
}
