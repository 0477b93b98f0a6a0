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

// TestQuotaRejectionLeavesSnapshot checks that a plan over quota is undone: the snapshot's
// usage is exactly as before, and the group waits with the quota reason.
func TestQuotaRejectionLeavesSnapshot(t *testing.T) {
	// The least charge of any plan for two of the three members is 2 GPUs, within quota,
	// but the preferred members are the 2-GPU launcher and a worker: 3 GPUs.
	g := gt.Group("job").Members(2).GPU(1).Min(2).Plus("job-launcher", gt.Pod("job-launcher").GPU(2).Obj()).Build()
	m := queue.New(queue.Options{StarvationThreshold: time.Hour})
	m.SetQueue(queue.Queue{Name: "team-a", Quota: gpus(2)})
	m.Push(queue.Entry{Key: "job", Queue: "team-a", QueuedAt: t0, Group: g})
	snap := cluster.New(gpuNodes("n", 2, 4), []*corev1.Pod{gt.Pod("other").GPU(1).Node("n-1").Obj()})
	before := snap.Usage()

	got := summary(m.Schedule(snap, t0))

	want := []string{"wait job #1: needs 3 nvidia.com/gpu, queue team-a has 0 of 2 in use"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Schedule (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snap.Usage()); diff != "" {
		t.Errorf("snapshot usage after a quota rejection (-before +after):\n%s", diff)
	}
}

// TestQuotaTrimsToMinMember checks that a group whose full plan is over quota is admitted
// with a plan for its MinMember preferred members when that one fits.
func TestQuotaTrimsToMinMember(t *testing.T) {
	g := gt.Group("job").Members(4).GPU(1).Min(2).Build()
	m := queue.New(queue.Options{})
	m.SetQueue(queue.Queue{Name: "team-a", Quota: gpus(3)})
	m.Push(queue.Entry{Key: "job", Queue: "team-a", QueuedAt: t0, Group: g})

	res := m.Schedule(cluster.New(gpuNodes("n", 1, 8), nil), t0)

	if len(res.Admitted) != 1 {
		t.Fatalf("want job admitted, got %v", summary(res))
	}
	a := res.Admitted[0]
	want := []string{"job-worker-0", "job-worker-1"}
	var got []string
	for _, as := range a.Plan.Assignments {
		got = append(got, as.Member)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placed members (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(gpus(2), a.Charge); diff != "" {
		t.Errorf("charge (-want +got):\n%s", diff)
	}
}

// TestManagerBookkeeping checks queue status through pushes, admissions, charges and
// releases, and that a replaced entry is decided as replaced.
func TestManagerBookkeeping(t *testing.T) {
	m := queue.New(queue.Options{})
	m.SetQueue(queue.Queue{Name: "team-b", Quota: gpus(8)})
	m.SetQueue(queue.Queue{Name: "team-a", Quota: gpus(8), Priority: 1})
	m.Charge("running", "team-a", gpus(2))
	m.Charge("gone", "team-b", gpus(1))
	m.Release("gone")
	m.Release("never-charged")
	m.Push(entry("a", 1, 1).build())
	m.Push(entry("a", 2, 1).build()) // replaces: two members now
	m.Push(entry("b", 1, 1).in("team-b").build())
	m.Push(entry("gone", 1, 1).in("team-b").build())
	m.Remove("gone")

	m.Schedule(cluster.New(gpuNodes("n", 1, 8), nil), t0)
	m.Push(entry("c", 1, 1).in("team-b").build())

	want := []queue.QueueStatus{
		{Queue: queue.Queue{Name: "team-a", Quota: gpus(8), Priority: 1}, Used: gpus(4), Admitted: 2},
		{Queue: queue.Queue{Name: "team-b", Quota: gpus(8)}, Used: gpus(1), Admitted: 1, Waiting: 1},
	}
	if diff := cmp.Diff(want, m.Queues()); diff != "" {
		t.Errorf("Queues (-want +got):\n%s", diff)
	}

	m.Release("a")
	m.RemoveQueue("team-b")
	want = []queue.QueueStatus{
		{Queue: queue.Queue{Name: "team-a", Quota: gpus(8), Priority: 1}, Used: gpus(2), Admitted: 1},
	}
	if diff := cmp.Diff(want, m.Queues()); diff != "" {
		t.Errorf("Queues after release and removal (-want +got):\n%s", diff)
	}
}

// TestPushAgainPlacesTheNewMembers: a group pushed again is placed as it is now, not by
// the shapes its members had when first pushed (the queue keeps their shape keys).
func TestPushAgainPlacesTheNewMembers(t *testing.T) {
	m := queue.New(queue.Options{StarvationThreshold: time.Hour})
	m.SetQueue(queue.Queue{Name: "team-a"})
	m.Push(entry("g", 2, 1).build())
	m.Push(entry("g", 2, 8).build()) // the same key, its members now asking 8 GPUs each
	res := m.Schedule(cluster.New(gpuNodes("n", 2, 4), nil), t0)
	if len(res.Admitted) != 0 || len(res.Waiting) != 1 || !res.Waiting[0].Reason.Impossible() {
		t.Errorf("2 × 8 GPUs on nodes of 4: want g impossible, got %q", summary(res))
	}
}

// TestChargeReplacesWhatAGroupHeld charges one group again and again: the same charge
// counts once, a different amount or queue replaces it.
func TestChargeReplacesWhatAGroupHeld(t *testing.T) {
	m := queue.New(queue.Options{})
	m.SetQueue(queue.Queue{Name: "team-a", Quota: gpus(8)})
	m.SetQueue(queue.Queue{Name: "team-b", Quota: gpus(8)})
	used := func() map[string]cluster.Resources {
		out := map[string]cluster.Resources{}
		for _, st := range m.Queues() {
			out[st.Name] = st.Used
		}
		return out
	}
	for _, step := range []struct {
		queue string
		gpus  int64
		want  map[string]cluster.Resources
	}{
		{"team-a", 2, map[string]cluster.Resources{"team-a": gpus(2), "team-b": {}}},
		{"team-a", 2, map[string]cluster.Resources{"team-a": gpus(2), "team-b": {}}},
		{"team-a", 3, map[string]cluster.Resources{"team-a": gpus(3), "team-b": {}}},
		{"team-b", 3, map[string]cluster.Resources{"team-a": {}, "team-b": gpus(3)}},
	} {
		m.Charge("g", step.queue, gpus(step.gpus))
		if diff := cmp.Diff(step.want, used()); diff != "" {
			t.Errorf("after charging %d GPUs to %s (-want +got):\n%s", step.gpus, step.queue, diff)
		}
	}
}
