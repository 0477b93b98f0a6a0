package queue_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/queue"
)

// fixedEnds is an Estimator whose nodes are free at given times; a node it does not
// list has an unknown end.
type fixedEnds map[string]time.Time

func (f fixedEnds) FreeAt(nodes []string) (time.Time, bool) {
	var latest time.Time
	for _, n := range nodes {
		t, ok := f[n]
		if !ok {
			return time.Time{}, false
		}
		if t.After(latest) {
			latest = t
		}
	}
	return latest, true
}

// PlannedNodes plans nothing: reservations fall back to the nodes with the most free.
func (fixedEnds) PlannedNodes(string) []string { return nil }

// TestBackfillBeforeTheReservation: on two 2-GPU nodes, each half busy until t0+1h, a
// starving gang of 4 GPUs reserves both nodes, expected to start at t0+1h. A one-GPU
// group behind it that declares 30 minutes backfills; one that declares 2 hours, or
// nothing, waits for the reservation; with an unknown end nothing backfills.
func TestBackfillBeforeTheReservation(t *testing.T) {
	nodes := gpuNodes("n", 2, 2)
	busy := []*corev1.Pod{gt.Pod("busy-0").GPU(1).Node("n-0").Obj(), gt.Pod("busy-1").GPU(1).Node("n-1").Obj()}
	for _, tc := range []struct {
		name  string
		ends  fixedEnds
		short time.Duration
		want  []string // admitted
	}{
		{"short backfills", fixedEnds{"n-0": t0.Add(time.Hour), "n-1": t0.Add(time.Hour)}, 30 * time.Minute, []string{"short"}},
		{"too long", fixedEnds{"n-0": t0.Add(time.Hour), "n-1": t0.Add(time.Hour)}, 2 * time.Hour, nil},
		{"no run time", fixedEnds{"n-0": t0.Add(time.Hour), "n-1": t0.Add(time.Hour)}, 0, nil},
		{"unknown end", fixedEnds{"n-0": t0.Add(time.Hour)}, 30 * time.Minute, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := queue.New(queue.Options{StarvationThreshold: 0})
			m.SetQueue(queue.Queue{Name: "team-a"})
			m.SetEstimator(tc.ends)
			m.Push(entry("gang", 4, 1).build())
			short := entry("short", 1, 1).at(time.Second).build()
			short.Runtime = tc.short
			m.Push(short)
			res := m.Schedule(cluster.New(nodes, busy), t0)
			var admitted []string
			for _, a := range res.Admitted {
				admitted = append(admitted, a.Key)
			}
			if !slices.Equal(admitted, tc.want) {
				t.Fatalf("admitted %v, want %v\n%v", admitted, tc.want, summary(res))
			}
			if len(res.Reservations) != 1 || res.Reservations[0].Key != "gang" {
				t.Fatalf("reservations %+v, want one for gang", res.Reservations)
			}
			want := t0.Add(time.Hour)
			if _, known := tc.ends["n-1"]; !known {
				want = time.Time{}
			}
			if got := res.Reservations[0].Start; !got.Equal(want) {
				t.Errorf("gang's expected start %v, want %v", got, want)
			}
		})
	}
}
