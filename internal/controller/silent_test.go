package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
	"github.com/muster-sched/muster/internal/source"
)

// TestMissingGroupGrace: a pod that names a PodGroup muster has not seen is told
// GroupNotFound (an Event, and the condition queued) only once it named it for
// missingGrace since muster first saw it so; meanwhile its group is due to be translated
// again when the grace ends. A pod seen later waits its own grace. A pod that names a
// group by a name no object can have is told at once. A pod forgotten (its group seen)
// starts a new grace if its group goes missing again.
func TestMissingGroupGrace(t *testing.T) {
	f := newPodSchedFixture(t)
	clk := f.w.clock.(*clocktesting.FakeClock)
	rec := events.NewFakeRecorder(10)
	f.w.recorder = rec
	n := f.w.mirror.notes
	n.conds = f.w
	ref := source.Ref{Source: engine.Coscheduling, Namespace: "default", Name: "late"}
	key := ref.Key()
	pod := func(name string) *corev1.Pod {
		p := gt.Pod(name).GPU(1).Obj()
		p.Spec.SchedulerName, p.Status.Phase, p.ResourceVersion = f.w.cfg.SchedulerName, corev1.PodPending, "1"
		return p
	}
	first, second := pod("late-0"), pod("late-1")
	// said returns what was said since it was last called: the Events' reasons and the
	// conditions queued, by pod.
	said := func() (evs []string, conds map[string]string) {
		for len(rec.Events) > 0 {
			evs = append(evs, strings.Fields(<-rec.Events)[1])
		}
		conds = map[string]string{}
		for pk, cond := range f.send(t, "1") {
			conds[pk] = cond.Reason
		}
		return evs, conds
	}
	silent := func(when string) {
		t.Helper()
		if evs, conds := said(); len(evs) != 0 || len(conds) != 0 {
			t.Fatalf("%s: said Events %q and conditions %v, want nothing", when, evs, conds)
		}
	}
	told := func(when string, pods ...string) {
		t.Helper()
		evs, conds := said()
		wantConds := map[string]string{}
		var wantEvs []string
		for _, pk := range pods {
			wantConds[pk] = source.ReasonGroupNotFound
			wantEvs = append(wantEvs, source.ReasonGroupNotFound)
		}
		if !cmp.Equal(evs, wantEvs) || !cmp.Equal(conds, wantConds) {
			t.Fatalf("%s: said Events %q and conditions %v, want %s told", when, evs, conds, pods)
		}
	}

	n.sayMissing(key, ref, []*corev1.Pod{first})
	silent("at once")
	if got, want := n.nextDue(), sim.Epoch.Add(missingGrace); !got.Equal(want) {
		t.Fatalf("next due %v, want %v", got, want)
	}
	clk.Step(3 * time.Second)
	n.sayMissing(key, ref, []*corev1.Pod{first, second})
	if got := n.takeDue(clk.Now()); len(got) != 0 {
		t.Fatalf("3 s in: due %q, want none", got)
	}
	silent("3 s in")
	clk.Step(2 * time.Second)
	if got := n.takeDue(clk.Now()); !cmp.Equal(got, []string{key}) {
		t.Fatalf("5 s in: due %q, want %q", got, key)
	}
	n.sayMissing(key, ref, []*corev1.Pod{first, second})
	told("5 s in", "default/late-0")
	if got, want := n.nextDue(), sim.Epoch.Add(3*time.Second+missingGrace); !got.Equal(want) {
		t.Fatalf("next due %v, want the second pod's grace end %v", got, want)
	}
	clk.Step(3 * time.Second)
	if got := n.takeDue(clk.Now()); !cmp.Equal(got, []string{key}) {
		t.Fatalf("8 s in: due %q, want %q", got, key)
	}
	n.sayMissing(key, ref, []*corev1.Pod{first, second})
	told("8 s in", "default/late-1")

	// A name no object can have: told at once.
	slash := source.Ref{Source: engine.Volcano, Namespace: "default", Name: "team/job"}
	n.sayMissing(slash.Key(), slash, []*corev1.Pod{pod("slash")})
	if evs, conds := said(); !cmp.Equal(evs, []string{source.ReasonInvalidGroupName}) || conds["default/slash"] != source.ReasonInvalidGroupName {
		t.Fatalf("an invalid name: said Events %q and conditions %v, want InvalidGroupName at once", evs, conds)
	}

	// Forgotten (the engine had the group), then missing again: a new grace.
	n.forget("default/late-0")
	n.sayMissing(key, ref, []*corev1.Pod{first})
	silent("missing again")
}
