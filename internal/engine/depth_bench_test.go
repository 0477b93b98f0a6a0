package engine_test

import (
	"fmt"
	"testing"
	"time"

	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// BenchmarkDecisionAtDepth: 1,000 nodes of 8 GPUs, full with 8,000 running one-GPU
// groups, and 1,000 or 10,000 one-GPU groups queued. Each iteration a running pod
// finishes and the engine steps: it admits exactly one queued group. ns/op is the time
// per decision; the two depths show how it grows with the queue.
func BenchmarkDecisionAtDepth(b *testing.B) {
	for _, queued := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) { benchDecision(b, queued) })
	}
}

func benchDecision(b *testing.B, queued int) {
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
