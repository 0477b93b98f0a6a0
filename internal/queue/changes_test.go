package queue_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// TestScheduleChangesAgreesWithSchedule: pass after pass, on a cluster whose groups are
// admitted and finish, with starving groups' reservations and backfills, ScheduleChanges
// admits what Schedule admits where Schedule does, keeps the same reservations, lists a
// waiting group with the kind of reason Schedule gives it when that kind changes, and
// has Schedule's reason for every waiting group (Manager.Reason). It holds
// ScheduleChanges' shortcuts
// (verdicts by class, failures reused on one snapshot version) to Schedule's one by one
// decisions.
func TestScheduleChangesAgreesWithSchedule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		opts := queue.Options{StarvationThreshold: time.Duration(rapid.IntRange(0, 2).Draw(t, "threshold")) * time.Hour}
		changes, full := queue.New(opts), queue.New(opts)
		nodes := gpuNodes("n", rapid.IntRange(1, 4).Draw(t, "nodes"), 4)
		snapC, snapF := cluster.New(nodes, nil), cluster.New(nodes, nil)
		for _, m := range []*queue.Manager{changes, full} {
			m.SetQueue(queue.Queue{Name: "team-a"})
			m.SetEstimator(fixedEnds{})
		}
		type running struct {
			key    string
			plans  [2]*placement.Plan
			frozen bool
		}
		var held []running
		reasons := map[string]string{}
		version, changed := uint64(0), true
		for pass := range rapid.IntRange(1, 6).Draw(t, "passes") {
			for i := range rapid.IntRange(0, 5).Draw(t, "groups") {
				b := entry(fmt.Sprintf("g%d-%d", pass, i), rapid.IntRange(1, 3).Draw(t, "members"), int64(rapid.IntRange(1, 4).Draw(t, "gpus")))
				b.e.Runtime = time.Duration(rapid.IntRange(0, 3).Draw(t, "runtime")) * 30 * time.Minute
				e := b.at(time.Duration(pass) * time.Minute).build()
				changes.Push(e)
				full.Push(e)
			}
			held = slices.DeleteFunc(held, func(r running) bool {
				if !rapid.Bool().Draw(t, "finish") {
					return false
				}
				r.plans[0].Revert()
				r.plans[1].Revert()
				changes.Release(r.key)
				full.Release(r.key)
				changed = true
				return true
			})
			// The version changes with the snapshot (and may change without it).
			if changed || rapid.Bool().Draw(t, "new version") {
				version++
			}
			changed = false
			now := t0.Add(time.Duration(pass) * time.Hour)
			rc, rf := changes.ScheduleChanges(snapC, version, now), full.Schedule(snapF, now)
			if got, want := summary(queue.Result{Admitted: rc.Admitted}), summary(queue.Result{Admitted: rf.Admitted}); !slices.Equal(got, want) {
				t.Fatalf("pass %d: ScheduleChanges admitted %q, Schedule %q", pass, got, want)
			}
			if got, want := summary(queue.Result{Reservations: rc.Reservations}), summary(queue.Result{Reservations: rf.Reservations}); !slices.Equal(got, want) {
				t.Fatalf("pass %d: ScheduleChanges reserved %q, Schedule %q", pass, got, want)
			}
			changed = len(rc.Admitted) > 0
			for i, a := range rc.Admitted {
				held = append(held, running{key: a.Key, plans: [2]*placement.Plan{a.Plan, rf.Admitted[i].Plan}})
				delete(reasons, a.Key)
			}
			for _, w := range rc.Waiting {
				reasons[w.Key] = string(w.Reason.Kind)
			}
			for _, w := range rf.Waiting {
				// A group is listed when its kind of reason changes; Reason says what it is.
				if got, want := reasons[w.Key], string(w.Reason.Kind); got != want {
					t.Fatalf("pass %d: %s waits, ScheduleChanges last listed it with %s, Schedule says %s", pass, w.Key, got, want)
				}
				r, ok := changes.Reason(w.Key)
				if got, want := r.String(), w.Reason.String(); !ok || got != want {
					t.Fatalf("pass %d: %s waits, ScheduleChanges says %q (%t), Schedule %q", pass, w.Key, got, ok, want)
				}
			}
		}
	})
}
