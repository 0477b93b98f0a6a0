package engine_test

import (
	"testing"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// TestGroupOfAnotherNamespaceIsNotAdmitted: a group that names a queue whose namespaces
// do not include its own waits, holding nothing, with QueueNotAllowed and one Warning
// event; once the queue admits the namespace, it is admitted. A group that names no
// queue while two admit its namespace waits with QueueAmbiguous, charged to neither.
func TestGroupOfAnotherNamespaceIsNotAdmitted(t *testing.T) {
	e := sim.NewEngine()
	e.SetNode(gt.Node("n-0").GPU(2).Obj())
	teamA := engine.Queue{Queue: queue.Queue{Name: "team-a", Namespaces: map[string]bool{"a": true}}}
	e.SetQueue(teamA)
	e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "team-b", Namespaces: map[string]bool{"a": true, "b": true}}})
	stranger := "Coscheduling/b/job"
	e.SetGroup(engine.GroupSpec{Key: stranger, Source: engine.Coscheduling, Namespace: "b", Name: "job", MinMember: 1, Queue: "team-a"})
	e.SetPod(gt.Pod("job-0").Namespace("b").GPU(1).Obj(), stranger)
	undecided := "Coscheduling/a/job"
	e.SetGroup(engine.GroupSpec{Key: undecided, Source: engine.Coscheduling, Namespace: "a", Name: "job", MinMember: 1,
		QueueCandidates: []string{"team-a", "team-b"}})
	e.SetPod(gt.Pod("job-0").Namespace("a").GPU(1).Obj(), undecided)

	out := e.Step(sim.Epoch)

	if len(out.Binds()) != 0 {
		t.Fatalf("binds of groups that may not use their queue: %+v", out.Binds())
	}
	wantWait := map[string]struct{ kind, queue string }{
		stranger:  {"QueueNotAllowed", "team-a"},
		undecided: {"QueueAmbiguous", ""},
	}
	for key, want := range wantWait {
		st, _ := e.Group(key)
		if st.Phase != lifecycle.Queued || st.WaitingKind != want.kind || st.Queue != want.queue {
			t.Errorf("%s: phase %s, waiting %s in queue %q; want Queued, %s in queue %q", key, st.Phase, st.WaitingKind, st.Queue, want.kind, want.queue)
		}
	}
	warnings := 0
	for _, ev := range out.Events {
		if ev.Type == engine.Warning && (ev.Reason == "QueueNotAllowed" || ev.Reason == "QueueAmbiguous") {
			warnings++
		}
	}
	if warnings != 2 {
		t.Errorf("events %+v: want one Warning for each of the two groups", out.Events)
	}

	teamA.Namespaces = map[string]bool{"a": true, "b": true}
	e.SetQueue(teamA)
	out = e.Step(sim.Epoch)
	if len(out.Binds()) != 1 || out.Binds()[0].Group != stranger {
		t.Errorf("after team-a admits namespace b, binds %+v; want %s bound", out.Binds(), stranger)
	}
}
