package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// TestFlipsAreQuiet: a group that waits behind a starving gang's reservation (Reserved)
// and, as capacity comes and goes on the reserved nodes, cannot fit at all
// (Unschedulable) and then fits again, reports a move between the two at most once a
// minute after the last it reported: one that did not last is never reported, one that
// lasts is reported when the minute ends, and one after the minute at once.
func TestFlipsAreQuiet(t *testing.T) {
	reserved, unschedulable := string(queue.Reserved), string(placement.Unschedulable)
	setup := func(t *testing.T) (*engine.Engine, string, time.Time) {
		e, now := halfBusyFor1h()
		declaring(e, "gang", 4, time.Hour) // reserves both nodes, where a GPU is free on each
		now = now.Add(sim.SimForecastEvery)
		e.Step(now)
		long := declaring(e, "long", 1, 2*time.Hour) // would still run when the gang starts
		now = now.Add(time.Second)
		if got := kindsOf(e.Step(now), long); len(got) != 1 || got[0] != reserved {
			t.Fatalf("long, queued: events %v, want one %s", got, reserved)
		}
		return e, long, now
	}
	pokes, others := 0, []string{}
	// fill takes every free GPU with a pod that is not muster's, and pokes a pass.
	fill := func(e *engine.Engine) {
		for _, n := range e.Snapshot().Nodes() {
			for range n.Allocatable[gt.GPU] - n.Requested[gt.GPU] {
				name := fmt.Sprintf("other-%d", len(others))
				e.SetPod(runningPod(name, n.Name()), "")
				others = append(others, "default/"+name)
			}
		}
		pokes++
		waitingGroup(e, fmt.Sprintf("poke%d", pokes), 0, false)
	}
	empty := func(e *engine.Engine) {
		for _, key := range others {
			e.RemovePod(key)
		}
		others = others[:0]
	}
	kind := func(e *engine.Engine, key string) string {
		st, _ := e.Group(key)
		return st.WaitingKind
	}

	t.Run("a flip that does not last is not reported", func(t *testing.T) {
		e, long, at := setup(t)
		fill(e)
		now := at.Add(10 * time.Second)
		out := e.Step(now)
		if got := kindsOf(out, long); len(got) != 0 || kind(e, long) != reserved {
			t.Fatalf("10s later, full: events %v, kind %s; want none, still %s", got, kind(e, long), reserved)
		}
		// The status says the reason it reports, kind and text alike.
		if st, _ := e.Group(long); !strings.HasPrefix(st.Waiting, "fits only on nodes reserved for starving group") {
			t.Errorf("10s later, status says %q under %s", st.Waiting, st.WaitingKind)
		}
		if want := at.Add(time.Minute); out.WakeAt.IsZero() || out.WakeAt.After(want) {
			t.Errorf("wake at %v, want by %v, when the flip's quiet ends", out.WakeAt, want)
		}
		empty(e)
		now = now.Add(10 * time.Second)
		if got := kindsOf(e.Step(now), long); len(got) != 0 {
			t.Fatalf("20s later, free again: events %v, want none", got)
		}
		now = at.Add(time.Minute)
		if got := kindsOf(e.Step(now), long); len(got) != 0 || kind(e, long) != reserved {
			t.Errorf("a minute later: events %v, kind %s; want none, %s", got, kind(e, long), reserved)
		}
		// A minute after the last report, a flip is reported at once.
		fill(e)
		now = now.Add(time.Second)
		if got := kindsOf(e.Step(now), long); len(got) != 1 || got[0] != unschedulable || kind(e, long) != unschedulable {
			t.Errorf("full again, past the minute: events %v, kind %s; want one %s", got, kind(e, long), unschedulable)
		}
	})

	t.Run("a flip that lasts is reported when the quiet ends", func(t *testing.T) {
		e, long, at := setup(t)
		fill(e)
		out := e.Step(at.Add(10 * time.Second))
		if got := kindsOf(out, long); len(got) != 0 {
			t.Fatalf("10s later: events %v, want none", got)
		}
		// The engine wakes by the end of the quiet, perhaps earlier for its forecast.
		now := at
		for len(kindsOf(out, long)) == 0 && out.WakeAt.After(now) && !out.WakeAt.After(at.Add(time.Minute)) {
			now = out.WakeAt
			out = e.Step(now)
		}
		if got := kindsOf(out, long); len(got) != 1 || got[0] != unschedulable || kind(e, long) != unschedulable || !now.Equal(at.Add(time.Minute)) {
			t.Fatalf("at %v: events %v, kind %s; want one %s at %v", now, got, kind(e, long), unschedulable, at.Add(time.Minute))
		}
		if st, _ := e.Group(long); !strings.Contains(st.Waiting, "0/2 nodes are available") {
			t.Errorf("at %v, status says %q under %s, want why it does not fit", now, st.Waiting, st.WaitingKind)
		}
	})
}

// kindsOf returns the reasons of out's events for group key that say it waits for room:
// Reserved or Unschedulable.
func kindsOf(out engine.Output, key string) []string {
	var kinds []string
	for _, ev := range out.Events {
		if ev.Group == key && (ev.Reason == string(queue.Reserved) || ev.Reason == string(placement.Unschedulable)) {
			kinds = append(kinds, ev.Reason)
		}
	}
	return kinds
}
