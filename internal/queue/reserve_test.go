package queue_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/queue"
)

// busyNodes is four 4-GPU nodes with 3, 1, 2 and 4 GPUs in use: n-1 and n-2 are the most
// free.
func busyNodes() *cluster.Snapshot {
	return cluster.New(gpuNodes("n", 4, 4), []*corev1.Pod{
		gt.Pod("x0").GPU(3).Node("n-0").Obj(),
		gt.Pod("x1").GPU(1).Node("n-1").Obj(),
		gt.Pod("x2").GPU(2).Node("n-2").Obj(),
		gt.Pod("x3").GPU(4).Node("n-3").Obj(),
	})
}

const gangWait = "wait gang #1: 0 of minMember 2 members can be placed now; gang-worker-0 ×2 {nvidia.com/gpu: 4}: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu"

// reserveStep is one Schedule call of a sequence on one Manager.
type reserveStep struct {
	do   func(m *queue.Manager)
	snap func() *cluster.Snapshot // busyNodes when nil
	now  time.Duration
	want []string
}

func runSteps(t *testing.T, m *queue.Manager, steps []reserveStep) {
	t.Helper()
	for i, st := range steps {
		if st.do != nil {
			st.do(m)
		}
		snap := busyNodes
		if st.snap != nil {
			snap = st.snap
		}
		got := summary(m.Schedule(snap(), t0.Add(st.now)))
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("step %d at %s (-want +got):\n%s", i, st.now, diff)
		}
	}
}

func newReserveManager(entries ...*entryBuilder) *queue.Manager {
	m := queue.New(queue.Options{StarvationThreshold: 5 * time.Minute})
	m.SetQueue(queue.Queue{Name: "team-a"})
	for _, e := range entries {
		m.Push(e.build())
	}
	return m
}

// TestReservationBackfill checks that a starving gang reserves the most-free nodes it would
// use, that later groups backfill only the rest, and that a group ahead of it in order is
// not held back.
func TestReservationBackfill(t *testing.T) {
	push := func(e *entryBuilder) func(*queue.Manager) { return func(m *queue.Manager) { m.Push(e.build()) } }
	m := newReserveManager(entry("gang", 2, 4))
	runSteps(t, m, []reserveStep{{
		now:  4 * time.Minute,
		want: []string{gangWait},
	}, {
		do:   push(entry("two", 1, 2).at(5 * time.Minute)),
		now:  5 * time.Minute,
		want: []string{gangWait, "wait two #2: fits only on nodes reserved for starving group gang", "reserve gang since 5m0s: n-1,n-2"},
	}, {
		do:  push(entry("one", 1, 1).at(6 * time.Minute)),
		now: 6 * time.Minute,
		want: []string{
			"admit one {nvidia.com/gpu: 1} on n-0",
			gangWait,
			"wait two #2: fits only on nodes reserved for starving group gang",
			"reserve gang since 5m0s: n-1,n-2",
		},
	}, {
		do:  push(entry("vip", 1, 2).prio(1).at(7 * time.Minute)),
		now: 7 * time.Minute,
		want: []string{
			"admit vip {nvidia.com/gpu: 2} on n-2",
			"wait gang #1: 0 of minMember 2 members can be placed now; gang-worker-0 ×2 {nvidia.com/gpu: 4}: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu",
			"wait two #2: fits only on nodes reserved for starving group gang",
			"reserve gang since 5m0s: n-0,n-1",
		},
	}})
}

// TestReservationLifetime checks when a reservation is given, moved and dropped.
func TestReservationLifetime(t *testing.T) {
	t.Run("an impossible group never gets one", func(t *testing.T) {
		m := newReserveManager(entry("huge", 1, 8))
		runSteps(t, m, []reserveStep{{
			now:  time.Hour,
			want: []string{"wait huge #1: huge-worker-0 needs 8 nvidia.com/gpu on one node; largest eligible node has 4 (impossible)"},
		}})
	})
	t.Run("dropped when the group is removed", func(t *testing.T) {
		m := newReserveManager(entry("gang", 2, 4), entry("two", 1, 2).at(time.Minute))
		runSteps(t, m, []reserveStep{{
			now:  5 * time.Minute,
			want: []string{gangWait, "wait two #2: fits only on nodes reserved for starving group gang", "reserve gang since 5m0s: n-1,n-2"},
		}, {
			do:   func(m *queue.Manager) { m.Remove("gang") },
			now:  6 * time.Minute,
			want: []string{"admit two {nvidia.com/gpu: 2} on n-2"},
		}})
	})
	t.Run("dropped when the group is requeued", func(t *testing.T) {
		m := newReserveManager(entry("gang", 2, 4))
		runSteps(t, m, []reserveStep{{
			now:  5 * time.Minute,
			want: []string{gangWait, "reserve gang since 5m0s: n-1,n-2"},
		}, {
			do:   func(m *queue.Manager) { m.Push(entry("gang", 2, 4).requeued().at(6 * time.Minute).build()) },
			now:  6 * time.Minute,
			want: []string{gangWait},
		}})
	})
	t.Run("dropped when the group is admitted", func(t *testing.T) {
		m := newReserveManager(entry("gang", 2, 4), entry("two", 1, 2).at(time.Minute))
		runSteps(t, m, []reserveStep{{
			now:  5 * time.Minute,
			want: []string{gangWait, "wait two #2: fits only on nodes reserved for starving group gang", "reserve gang since 5m0s: n-1,n-2"},
		}, {
			snap: func() *cluster.Snapshot { return cluster.New(gpuNodes("n", 3, 4), nil) },
			now:  6 * time.Minute,
			want: []string{"admit gang {nvidia.com/gpu: 8} on n-0,n-1", "admit two {nvidia.com/gpu: 2} on n-2"},
		}})
	})
	t.Run("dropped when the group waits for quota", func(t *testing.T) {
		m := newReserveManager(entry("gang", 2, 4))
		runSteps(t, m, []reserveStep{{
			now:  5 * time.Minute,
			want: []string{gangWait, "reserve gang since 5m0s: n-1,n-2"},
		}, {
			do: func(m *queue.Manager) {
				m.SetQueue(queue.Queue{Name: "team-a", Quota: gpus(8)})
				m.Charge("running", "team-a", gpus(1))
			},
			now:  6 * time.Minute,
			want: []string{"wait gang #1: needs 8 nvidia.com/gpu, queue team-a has 1 of 8 in use"},
		}})
	})
	t.Run("moves with the nodes the group would use", func(t *testing.T) {
		moved := func() *cluster.Snapshot {
			return cluster.New(gpuNodes("n", 4, 4), []*corev1.Pod{
				gt.Pod("x0").GPU(1).Node("n-0").Obj(),
				gt.Pod("x1").GPU(3).Node("n-1").Obj(),
				gt.Pod("x2").GPU(3).Node("n-2").Obj(),
				gt.Pod("x3").GPU(2).Node("n-3").Obj(),
			})
		}
		m := newReserveManager(entry("gang", 2, 4))
		runSteps(t, m, []reserveStep{{
			now:  5 * time.Minute,
			want: []string{gangWait, "reserve gang since 5m0s: n-1,n-2"},
		}, {
			// The nodes it left are open again: one GPU fits on either.
			do:   func(m *queue.Manager) { m.Push(entry("one", 1, 1).at(6 * time.Minute).build()) },
			snap: moved,
			now:  6 * time.Minute,
			want: []string{"admit one {nvidia.com/gpu: 1} on n-1", gangWait, "reserve gang since 5m0s: n-0,n-3"},
		}})
	})
	t.Run("moves to a starving group ahead in order", func(t *testing.T) {
		m := newReserveManager(entry("gang", 2, 4).at(time.Minute))
		runSteps(t, m, []reserveStep{{
			now:  6 * time.Minute,
			want: []string{gangWait, "reserve gang since 6m0s: n-1,n-2"},
		}, {
			do:  func(m *queue.Manager) { m.Push(entry("first", 1, 4).prio(1).build()) },
			now: 7 * time.Minute,
			want: []string{
				"wait first #1: 0 of minMember 1 members can be placed now; first-worker-0 {nvidia.com/gpu: 4}: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu",
				"wait gang #2: 0 of minMember 2 members can be placed now; gang-worker-0 ×2 {nvidia.com/gpu: 4}: 0/4 nodes are available: 3 Insufficient nvidia.com/gpu, 1 node(s) were reserved for a waiting group",
				"reserve first since 7m0s: n-1",
			},
		}})
	})
}

// TestPreemptionReservation checks the nodes reserved for a preemptor while its victims
// release them: kept while it does not fit although it is not starving, closed to the
// groups after it, and dropped when it is admitted.
func TestPreemptionReservation(t *testing.T) {
	m := newReserveManager(entry("vip", 1, 4).prio(10).at(time.Second), entry("small", 1, 1).at(time.Minute),
		entry("peer", 1, 1).prio(10), entry("boss", 1, 1).prio(11).at(time.Minute))
	runSteps(t, m, []reserveStep{{
		// x1's group on n-1 and x0's on n-0 are being preempted for vip. small and peer
		// (of vip's priority, ahead of it) would take n-0 (the tightest fit) but may only
		// use n-2; boss, of higher priority, may take n-0.
		do:  func(m *queue.Manager) { m.ReserveForPreemption("vip", 10, []string{"n-1", "n-0"}, false, t0) },
		now: time.Minute,
		want: []string{
			"admit boss {nvidia.com/gpu: 1} on n-0",
			"admit peer {nvidia.com/gpu: 1} on n-2",
			"admit small {nvidia.com/gpu: 1} on n-2",
			"wait vip #1: 0 of minMember 1 members can be placed now; vip-worker-0 {nvidia.com/gpu: 4}: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu",
			"reserve vip since 0s: n-0,n-1",
		},
	}, {
		// x1 is gone: vip takes n-1, and the reservation ends with its admission.
		do: func(m *queue.Manager) { m.Push(entry("late", 1, 1).at(2 * time.Minute).build()) },
		snap: func() *cluster.Snapshot {
			return cluster.New(gpuNodes("n", 4, 4), []*corev1.Pod{
				gt.Pod("x0").GPU(3).Node("n-0").Obj(),
				gt.Pod("x2").GPU(3).Node("n-2").Obj(),
				gt.Pod("x3").GPU(4).Node("n-3").Obj(),
			})
		},
		now:  2 * time.Minute,
		want: []string{"admit vip {nvidia.com/gpu: 4} on n-1", "admit late {nvidia.com/gpu: 1} on n-0"},
	}})
	if r := m.Reservations(); len(r) != 0 {
		t.Errorf("after the preemptor's admission: expected no reservation, found %+v", r)
	}
}

// TestPreemptionReservations checks several preemptions in flight at once: each
// preemptor's nodes are closed to the groups of its priority or lower, the other
// preemptors included, and open to those of higher priority.
func TestPreemptionReservations(t *testing.T) {
	m := newReserveManager(entry("vip", 1, 4).prio(10), entry("boss", 1, 4).prio(20),
		entry("top", 1, 1).prio(25), entry("mid", 1, 1).prio(15), entry("peer", 1, 1).prio(10).at(time.Minute))
	oneFree := func() *cluster.Snapshot {
		return cluster.New(gpuNodes("n", 4, 4), []*corev1.Pod{
			gt.Pod("x0").GPU(3).Node("n-0").Obj(),
			gt.Pod("x1").GPU(3).Node("n-1").Obj(),
			gt.Pod("x2").GPU(3).Node("n-2").Obj(),
			gt.Pod("x3").GPU(4).Node("n-3").Obj(),
		})
	}
	runSteps(t, m, []reserveStep{{
		// vip's victim is on n-0, boss's on n-1. top may use both and takes n-0 (the
		// first of the tightest); mid may use vip's n-0, not boss's n-1, and takes n-2;
		// peer may use neither and would fit only on boss's n-1.
		do: func(m *queue.Manager) {
			m.ReserveForPreemption("vip", 10, []string{"n-0"}, false, t0)
			m.ReserveForPreemption("boss", 20, []string{"n-1"}, false, t0)
		},
		snap: oneFree,
		now:  time.Minute,
		want: []string{
			"admit top {nvidia.com/gpu: 1} on n-0",
			"admit mid {nvidia.com/gpu: 1} on n-2",
			"wait boss #1: 0 of minMember 1 members can be placed now; boss-worker-0 {nvidia.com/gpu: 4}: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu",
			"wait vip #2: 0 of minMember 1 members can be placed now; vip-worker-0 {nvidia.com/gpu: 4}: 0/4 nodes are available: 3 Insufficient nvidia.com/gpu, 1 node(s) were reserved for a waiting group",
			"wait peer #3: fits only on nodes being freed by preemption for group boss",
			"reserve boss since 0s: n-1",
			"reserve vip since 0s: n-0",
		},
	}, {
		// boss's victim is gone and boss is admitted on n-1; vip's reservation stays, and
		// closes n-0 to peer.
		snap: func() *cluster.Snapshot {
			return cluster.New(gpuNodes("n", 4, 4), []*corev1.Pod{
				gt.Pod("x0").GPU(3).Node("n-0").Obj(),
				gt.Pod("top").GPU(1).Node("n-0").Obj(),
				gt.Pod("mid").GPU(1).Node("n-2").Obj(),
				gt.Pod("x2").GPU(3).Node("n-2").Obj(),
				gt.Pod("x3").GPU(4).Node("n-3").Obj(),
			})
		},
		now: 2 * time.Minute,
		want: []string{
			"admit boss {nvidia.com/gpu: 4} on n-1",
			"wait vip #1: 0 of minMember 1 members can be placed now; vip-worker-0 {nvidia.com/gpu: 4}: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu",
			"wait peer #2: 0 of minMember 1 members can be placed now; peer-worker-0 {nvidia.com/gpu: 1}: 0/4 nodes are available: 3 Insufficient nvidia.com/gpu, 1 node(s) were reserved for a waiting group",
			"reserve vip since 0s: n-0",
		},
	}})
}

// TestPreemptorKeepsItsNodesWhileBlockedByAnother: a preemptor that would fit only on
// the nodes being freed for a preemptor of higher priority keeps its own reservation.
func TestPreemptorKeepsItsNodesWhileBlockedByAnother(t *testing.T) {
	m := newReserveManager(entry("vip", 1, 4).prio(10), entry("boss", 2, 4).prio(20))
	m.ReserveForPreemption("vip", 10, []string{"n-0"}, false, t0)
	m.ReserveForPreemption("boss", 20, []string{"n-1", "n-2"}, false, t0)
	snap := cluster.New(gpuNodes("n", 3, 4), []*corev1.Pod{
		gt.Pod("x0").GPU(3).Node("n-0").Obj(), // vip's victim, still there
		gt.Pod("x2").GPU(3).Node("n-2").Obj(), // boss's other victim, still there
	})
	got := summary(m.Schedule(snap, t0.Add(time.Minute)))
	want := []string{
		"wait boss #1: 1 of minMember 2 members can be placed now; boss-worker-0 ×2 {nvidia.com/gpu: 4}: 1/3 nodes are available: 2 Insufficient nvidia.com/gpu",
		"wait vip #2: fits only on nodes being freed by preemption for group boss",
		"reserve boss since 0s: n-1,n-2",
		"reserve vip since 0s: n-0",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestReservationLeavesWhatTheGangDoesNotNeed: a starving gang of three 4-GPU members is
// reserved two 8-GPU nodes, and needs only half of one of them; a group behind it that
// may not backfill (it declares no run time) still uses the other half, as far as it is
// free now, but no more.
func TestReservationLeavesWhatTheGangDoesNotNeed(t *testing.T) {
	busy := func() *cluster.Snapshot {
		return cluster.New(gpuNodes("n", 2, 8), []*corev1.Pod{
			gt.Pod("x0").GPU(6).Node("n-0").Obj(),
			gt.Pod("x1").GPU(2).Node("n-1").Obj(),
		})
	}
	withTwo := func() *cluster.Snapshot {
		s := busy()
		s.AddPod(gt.Pod("two-0").GPU(2).Node("n-1").Obj())
		return s
	}
	const gangWaits = "wait gang #1: 1 of minMember 3 members can be placed now; gang-worker-0 ×3 {nvidia.com/gpu: 4}: 1/2 nodes are available: 1 Insufficient nvidia.com/gpu"
	const reserved = "reserve gang since 5m0s: n-0,n-1"
	push := func(e *entryBuilder) func(*queue.Manager) { return func(m *queue.Manager) { m.Push(e.build()) } }
	m := newReserveManager(entry("gang", 3, 4))
	runSteps(t, m, []reserveStep{{
		snap: busy,
		now:  5 * time.Minute,
		want: []string{gangWaits, reserved},
	}, {
		do:   push(entry("three", 1, 3).at(6 * time.Minute)),
		snap: busy,
		now:  6 * time.Minute,
		// n-1 has 6 GPUs free, of which the gang's plan needs 4: 2 are open.
		want: []string{gangWaits, "wait three #2: fits only on nodes reserved for starving group gang", reserved},
	}, {
		do:   push(entry("two", 1, 2).at(7 * time.Minute)),
		snap: busy,
		now:  7 * time.Minute,
		want: []string{"admit two {nvidia.com/gpu: 2} on n-1", gangWaits, "wait three #2: fits only on nodes reserved for starving group gang", reserved},
	}, {
		do:   push(entry("one", 1, 1).at(8 * time.Minute)),
		snap: withTwo,
		now:  8 * time.Minute,
		want: []string{gangWaits, "wait three #2: fits only on nodes reserved for starving group gang",
			"wait one #3: fits only on nodes reserved for starving group gang", reserved},
	}})
}
