package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// TestSizeOrder: one GPU, held. With a handicap of 12 minutes per GPU-hour, at most 2
// hours, a group that declares 10 minutes goes ahead of one that declares 10 hours
// queued a minute before it; a group that declares nothing gets the full handicap; and
// one queued more than 2 hours after the long group does not pass it. Without
// SizeOrder the queue is first come, first served.
func TestSizeOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order engine.SizeOrder
		want  []string
	}{
		{"handicap", engine.SizeOrder{PerDeviceHour: 12 * time.Minute, Max: 2 * time.Hour}, []string{"short", "long", "unknown", "late"}},
		{"first come, first served", engine.SizeOrder{}, []string{"long", "short", "unknown", "late"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := engine.New(engine.Config{DefaultQueue: "default", Policy: lifecycle.DefaultPolicy(),
				StarvationThreshold: 1000 * time.Hour, SizeOrder: tc.order})
			e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "default"}})
			e.SetNode(gt.Node("n").GPU(1).Obj())
			now := sim.Epoch
			hold := declaring(e, "hold", 1, 0)
			out := e.Step(now)
			e.SetPod(runningPod("hold-0", out.Binds()[0].Node), hold)
			for _, g := range []struct {
				name  string
				at    time.Duration
				declr time.Duration
			}{{"long", 0, 10 * time.Hour}, {"short", time.Minute, 10 * time.Minute}, {"unknown", 2 * time.Minute, 0}, {"late", 2*time.Hour + 3*time.Minute, 10 * time.Minute}} {
				declaring(e, g.name, 1, g.declr)
				e.Step(sim.Epoch.Add(g.at))
			}
			now = sim.Epoch.Add(3 * time.Hour)
			last := hold
			var got []string
			for range 4 {
				done := runningPod(podOf(last), nodeOf(t, e, last))
				done.Status.Phase = "Succeeded"
				e.SetPod(done, last)
				now = now.Add(time.Minute)
				out := e.Step(now)
				binds := out.Binds()
				if len(binds) != 1 {
					t.Fatalf("after %s finished: binds %+v, want one group's", last, binds)
				}
				last = binds[0].Group
				e.SetPod(runningPod(podOf(last), binds[0].Node), last)
				e.Step(now)
				got = append(got, last[len("Coscheduling/default/"):])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("admitted %v, want %v", got, tc.want)
			}
		})
	}
}

func podOf(key string) string { return key[len("Coscheduling/default/"):] + "-0" }

func nodeOf(t *testing.T, e *engine.Engine, key string) string {
	st, _ := e.Group(key)
	for _, n := range st.Placement {
		return n
	}
	t.Fatalf("%s has no member placed", key)
	return ""
}
