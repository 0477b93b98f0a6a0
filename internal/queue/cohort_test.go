package queue_test

import (
	"fmt"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
	"testing"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/queue"
)

func TestScheduleCohort(t *testing.T) {
	// Two teams of 8 GPUs each that lend each other what they do not use.
	teams := func(limitA cluster.Resources) []queue.Queue {
		return []queue.Queue{
			{Name: "team-a", Quota: gpus(8), Cohort: "research", BorrowingLimit: limitA},
			{Name: "team-b", Quota: gpus(8), Cohort: "research"},
		}
	}
	tests := []scheduleCase{{
		name:    "a queue borrows what the other does not use",
		nodes:   gpuNodes("n", 4, 8),
		queues:  teams(nil),
		entries: []*entryBuilder{entry("a1", 8, 1), entry("a2", 8, 1)},
		want: []string{
			"admit a1 {nvidia.com/gpu: 8} on n-0",
			"admit a2 {nvidia.com/gpu: 8} on n-1",
		},
	}, {
		name:      "no more than the cohort's summed quota",
		nodes:     gpuNodes("n", 4, 8),
		queues:    teams(nil),
		charged:   map[string]cluster.Resources{"a1": gpus(8), "b1": gpus(4)},
		chargedTo: map[string]string{"b1": "team-b"},
		entries:   []*entryBuilder{entry("a2", 8, 1)},
		want: []string{
			"wait a2 #1: needs 8 nvidia.com/gpu, queue team-a has 8 of 8 in use (16 with borrowing) and cohort research has 12 of 16 in use",
		},
	}, {
		name:    "the borrowing limit caps what a queue holds beyond its quota",
		nodes:   gpuNodes("n", 4, 8),
		queues:  teams(gpus(4)),
		charged: map[string]cluster.Resources{"a1": gpus(8)},
		entries: []*entryBuilder{entry("a2", 8, 1), entry("a3", 4, 1)},
		want: []string{
			"admit a3 {nvidia.com/gpu: 4} on n-0",
			"wait a2 #1: needs 8 nvidia.com/gpu, queue team-a has 8 of 8 in use (12 with borrowing) and cohort research has 8 of 16 in use",
		},
	}, {
		name:    "more than the quota and all it may borrow is impossible",
		nodes:   gpuNodes("n", 4, 8),
		queues:  teams(gpus(4)),
		entries: []*entryBuilder{entry("huge", 13, 1)},
		want: []string{
			"wait huge #1: needs 13 nvidia.com/gpu, more than queue team-a may ever hold: its quota of 8 and what it may borrow from cohort research, 12 in all (impossible)",
		},
	}, {
		name:      "a group within its own quota, lent out, is told it is reclaimed",
		nodes:     gpuNodes("n", 4, 8),
		queues:    teams(nil),
		charged:   map[string]cluster.Resources{"a1": gpus(8), "a2": gpus(8)},
		chargedTo: map[string]string{},
		entries:   []*entryBuilder{entry("b1", 4, 1).in("team-b")},
		want: []string{
			"wait b1 #1: needs 4 nvidia.com/gpu, within queue team-b's quota (0 of 8 in use), but cohort research has 16 of 16 in use: the rest is lent to other queues and is reclaimed",
		},
	}, {
		name:  "a queue outside the cohort neither lends nor borrows",
		nodes: gpuNodes("n", 4, 8),
		queues: append(teams(nil),
			queue.Queue{Name: "solo", Quota: gpus(8)}),
		entries: []*entryBuilder{entry("a1", 16, 1), entry("s1", 16, 1).in("solo"), entry("a2", 8, 1)},
		want: []string{
			"admit a1 {nvidia.com/gpu: 16} on n-0,n-1",
			"wait s1 #1: needs 16 nvidia.com/gpu, more than queue solo's whole quota of 8 (impossible)",
			"wait a2 #1: needs 8 nvidia.com/gpu, queue team-a has 16 of 8 in use (16 with borrowing) and cohort research has 16 of 16 in use",
		},
	}, {
		name:  "a lending limit keeps the rest of a queue's quota for it alone",
		nodes: gpuNodes("n", 4, 8),
		queues: []queue.Queue{
			{Name: "team-a", Quota: gpus(8), Cohort: "research"},
			{Name: "team-b", Quota: gpus(8), Cohort: "research", LendingLimit: gpus(2)},
		},
		entries: []*entryBuilder{entry("a1", 10, 1), entry("a2", 1, 1).at(time.Second), entry("b1", 6, 1).in("team-b").at(2 * time.Second)},
		want: []string{
			"admit a1 {nvidia.com/gpu: 10} on n-0,n-1",
			"admit b1 {nvidia.com/gpu: 6} on n-1",
			"wait a2 #1: needs 1 nvidia.com/gpu, queue team-a has 10 of 8 in use (10 with borrowing) and cohort research has 10 of 10 in use",
		},
	}, {
		name:  "only the queues whose quota lists a resource lend it",
		nodes: gpuNodes("n", 4, 8),
		queues: []queue.Queue{
			{Name: "team-a", Quota: gpus(8), Cohort: "research"},
			{Name: "cpu-only", Quota: cluster.Resources{"cpu": 64000}, Cohort: "research"},
		},
		entries: []*entryBuilder{entry("a1", 9, 1)},
		want: []string{
			"wait a1 #1: needs 9 nvidia.com/gpu, more than queue team-a may ever hold: its quota of 8 and what it may borrow from cohort research, 8 in all (impossible)",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// TestNoReclaim: with reclaiming off, a group within its own quota whose cohort lent it
// out waits as any group over quota does.
func TestNoReclaim(t *testing.T) {
	m := queue.New(queue.Options{StarvationThreshold: time.Hour, NoReclaim: true})
	for _, q := range []string{"team-a", "team-b"} {
		m.SetQueue(queue.Queue{Name: q, Quota: gpus(8), Cohort: "research"})
	}
	m.Charge("a1", "team-a", gpus(16))
	m.Push(entry("b1", 4, 1).in("team-b").build())
	got := summary(m.Schedule(cluster.New(gpuNodes("n", 4, 8), nil), t0.Add(time.Minute)))
	want := []string{"wait b1 #1: needs 4 nvidia.com/gpu, queue team-b has 0 of 8 in use (16 with borrowing) and cohort research has 16 of 16 in use"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Schedule (-want +got):\n%s", diff)
	}
}

func TestBorrowedAndFitsQuotaWithout(t *testing.T) {
	m := queue.New(queue.Options{})
	m.SetQueue(queue.Queue{Name: "team-a", Quota: gpus(8), Cohort: "research"})
	m.SetQueue(queue.Queue{Name: "team-b", Quota: gpus(8), Cohort: "research"})
	m.Charge("a1", "team-a", gpus(8))
	m.Charge("a2", "team-a", gpus(6))
	if a, b, cpu := m.Borrowed("team-a", gt.GPU), m.Borrowed("team-b", gt.GPU), m.Borrowed("team-a", "cpu"); a != 6 || b != 0 || cpu != 0 {
		t.Errorf("Borrowed: team-a %d, team-b %d, team-a's cpu %d; expected team-a's 6 GPUs only", a, b, cpu)
	}
	m.Push(entry("b1", 4, 1).in("team-b").build())
	if m.FitsQuotaWithout("b1", nil) {
		t.Errorf("b1 fits with 14 of 16 in use; expected not")
	}
	if !m.FitsQuotaWithout("b1", []string{"a2"}) {
		t.Errorf("b1 does not fit once a2 releases its 6; expected it to")
	}
	if m.FitsQuotaWithout("b1", nil) {
		t.Errorf("FitsQuotaWithout changed the usage")
	}
	if got := m.Queues()[0].Used[gt.GPU]; got != 14 {
		t.Errorf("team-a uses %d GPUs after the checks, expected 14", got)
	}
}

// TestBorrowingPausedWhileReclaiming: while a group of team-b holds a reservation for
// reclaiming, team-a may use its own quota but not borrow; a reservation for plain
// preemption pauses nothing.
func TestBorrowingPausedWhileReclaiming(t *testing.T) {
	for _, reclaim := range []bool{true, false} {
		m := queue.New(queue.Options{StarvationThreshold: time.Hour})
		for _, q := range []string{"team-a", "team-b", "team-c"} {
			m.SetQueue(queue.Queue{Name: q, Quota: gpus(8), Cohort: "research"})
		}
		m.Charge("a1", "team-a", gpus(6))
		m.Charge("c1", "team-c", gpus(12))
		m.Push(entry("b1", 8, 1).in("team-b").build())
		m.ReserveForPreemption("b1", 0, []string{"n-3"}, reclaim, t0)
		m.Push(entry("a2", 2, 1).build())
		m.Push(entry("a3", 1, 1).at(time.Second).build())
		got := summary(m.Schedule(cluster.New(gpuNodes("n", 4, 8), nil), t0.Add(time.Minute)))
		b1 := "wait b1 #1: needs 8 nvidia.com/gpu, within queue team-b's quota (0 of 8 in use), but cohort research has 18 of 24 in use: the rest is lent to other queues and is reclaimed"
		want := []string{
			"admit a2 {nvidia.com/gpu: 2} on n-0",
			b1,
			"wait a3 #1: needs 1 nvidia.com/gpu, queue team-a has 8 of 8 in use and may not borrow from cohort research while another of its queues reclaims its quota",
			"reserve b1 since 0s: n-3",
		}
		if !reclaim {
			want = []string{"admit a2 {nvidia.com/gpu: 2} on n-0", "admit a3 {nvidia.com/gpu: 1} on n-0", b1, "reserve b1 since 0s: n-3"}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("reclaim %t: Schedule (-want +got):\n%s", reclaim, diff)
		}
	}
}

// TestCohortBoundsHold: whatever the quotas, borrowing and lending limits, groups and
// releases, the groups Schedule admits keep every queue within its quota plus what it
// may borrow, the cohort's draws within what its queues lend (within their summed
// quotas, without lending limits), and a queue outside a cohort within its quota; and a
// group that fits its own queue's quota is never told its quota is never enough.
func TestCohortBoundsHold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := queue.New(queue.Options{StarvationThreshold: time.Hour})
		n := rapid.IntRange(1, 4).Draw(t, "queues")
		qs := make([]queue.Queue, n)
		for i := range qs {
			q := queue.Queue{Name: fmt.Sprintf("q%d", i), Quota: gpus(int64(rapid.IntRange(0, 8).Draw(t, "quota")))}
			if rapid.Bool().Draw(t, "in cohort") {
				q.Cohort = "c"
				if rapid.Bool().Draw(t, "limited") {
					q.BorrowingLimit = gpus(int64(rapid.IntRange(0, 8).Draw(t, "limit")))
				}
				if rapid.Bool().Draw(t, "lends less") {
					q.LendingLimit = gpus(int64(rapid.IntRange(0, 8).Draw(t, "lending limit")))
				}
			}
			qs[i] = q
			m.SetQueue(q)
		}
		nodes := gpuNodes("n", 8, 8)
		var held []string
		for round := range rapid.IntRange(1, 5).Draw(t, "rounds") {
			for j := range rapid.IntRange(0, 6).Draw(t, "groups") {
				q := qs[rapid.IntRange(0, n-1).Draw(t, "queue")]
				size := rapid.IntRange(1, 6).Draw(t, "size")
				m.Push(entry(fmt.Sprintf("g%d-%d", round, j), size, 1).in(q.Name).build())
			}
			for _, key := range held {
				if rapid.Bool().Draw(t, "release") {
					m.Release(key)
				}
			}
			res := m.Schedule(cluster.New(nodes, nil), t0.Add(time.Duration(round)*time.Minute))
			for _, a := range res.Admitted {
				held = append(held, a.Key)
			}
			// Each queue of the cohort keeps quota − lent for itself; what it holds beyond
			// that is drawn from the pool of what the queues lend.
			used := map[string]int64{}
			kept := func(q queue.Queue) int64 {
				lent := q.Quota[gt.GPU]
				if limit, ok := q.LendingLimit[gt.GPU]; ok {
					lent = min(lent, limit)
				}
				return q.Quota[gt.GPU] - lent
			}
			var drawn, pool int64
			for _, st := range m.Queues() {
				used[st.Name] = st.Used[gt.GPU]
				if st.Cohort == "c" {
					drawn += max(st.Used[gt.GPU]-kept(st.Queue), 0)
					pool += st.Quota[gt.GPU] - kept(st.Queue)
				}
			}
			if drawn > pool {
				t.Fatalf("round %d: the cohort's queues draw %d GPUs from a pool of %d", round, drawn, pool)
			}
			for _, q := range qs {
				most := q.Quota[gt.GPU]
				if q.Cohort != "" {
					most = kept(q) + pool
					if limit, ok := q.BorrowingLimit[gt.GPU]; ok {
						most = min(most, q.Quota[gt.GPU]+limit)
					}
				}
				if used[q.Name] > most {
					t.Fatalf("round %d: queue %s holds %d GPUs, at most %d allowed", round, q.Name, used[q.Name], most)
				}
			}
			for _, w := range res.Waiting {
				q := qs[w.Queue[1]-'0']
				if w.Reason.Kind == queue.QuotaNeverEnough && w.Reason.Need <= q.Quota[gt.GPU] {
					t.Fatalf("round %d: %s needs %d of queue %s's %d and is told: %s", round, w.Key, w.Reason.Need, q.Name, q.Quota[gt.GPU], w.Reason)
				}
			}
		}
	})
}
