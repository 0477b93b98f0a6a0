package queue_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/queue"
)

// streamRun is the outcome of a stream simulation.
type streamRun struct {
	// gangAdmitted is when the 8-GPU gang was admitted, or -1.
	gangAdmitted time.Duration
	// reservedAt is when a reservation for the gang first appeared, or -1.
	reservedAt time.Duration
}

const (
	gangArrival = time.Minute
	runTime     = 10 * time.Minute
)

// simulateStream runs, minute by minute for the given length, eight one-GPU nodes fed a
// one-GPU single-pod group every minute from t=0 (each runs ten minutes) and one gang of
// eight one-GPU members arriving at t=1m. Each minute it releases the groups that finished,
// queues the arrivals, and schedules on a fresh snapshot of what runs.
func simulateStream(t *testing.T, threshold, length time.Duration) streamRun {
	t.Helper()
	nodes := gpuNodes("gpu", 8, 1)
	m := queue.New(queue.Options{StarvationThreshold: threshold})
	m.SetQueue(queue.Queue{Name: "team-a"})
	type running struct {
		key  string
		pods []*corev1.Pod
		ends time.Duration
	}
	var run []running
	out := streamRun{gangAdmitted: -1, reservedAt: -1}
	for now := time.Duration(0); now <= length; now += time.Minute {
		var pods []*corev1.Pod
		kept := run[:0]
		for _, r := range run {
			if r.ends <= now {
				m.Release(r.key)
				continue
			}
			kept = append(kept, r)
			pods = append(pods, r.pods...)
		}
		run = kept
		m.Push(entry(fmt.Sprintf("small-%03d", now/time.Minute), 1, 1).at(now).build())
		if now == gangArrival {
			m.Push(entry("gang", 8, 1).at(now).build())
		}
		res := m.Schedule(cluster.New(nodes, pods), t0.Add(now))
		if slices.ContainsFunc(res.Reservations, func(r queue.Reservation) bool { return r.Key == "gang" }) && out.reservedAt < 0 {
			out.reservedAt = now
		}
		for _, a := range res.Admitted {
			run = append(run, running{key: a.Key, pods: boundPods(a), ends: now + runTime})
			if a.Key == "gang" {
				out.gangAdmitted = now
				return out
			}
		}
	}
	return out
}

// boundPods returns an admission's placed members as pods bound to their nodes.
func boundPods(a queue.Admission) []*corev1.Pod {
	var out []*corev1.Pod
	for _, m := range a.Group.Members {
		if node := a.Plan.NodeOf(m.Name); node != "" {
			p := m.Pod.DeepCopy()
			p.Spec.NodeName = node
			out = append(out, p)
		}
	}
	return out
}

// TestStarvation checks DESIGN §6: a stream of small groups cannot starve a big one. With
// reservations, the gang is admitted within the threshold plus one run time of arriving;
// without them it never is.
func TestStarvation(t *testing.T) {
	const threshold = 5 * time.Minute
	with := simulateStream(t, threshold, time.Hour)
	t.Logf("threshold %s: gang arrived at %s, reserved at %s, admitted at %s", threshold, gangArrival, with.reservedAt, with.gangAdmitted)
	if with.gangAdmitted < 0 {
		t.Fatalf("with a %s threshold the gang was never admitted in an hour", threshold)
	}
	if want := gangArrival + threshold; with.reservedAt != want {
		t.Errorf("gang reserved at %s, want %s (arrival + threshold)", with.reservedAt, want)
	}
	if limit := gangArrival + threshold + runTime; with.gangAdmitted > limit {
		t.Errorf("gang admitted at %s, want no later than %s (arrival + threshold + run time)", with.gangAdmitted, limit)
	}

	without := simulateStream(t, 1000*time.Hour, time.Hour)
	if without.gangAdmitted >= 0 || without.reservedAt >= 0 {
		t.Errorf("without reservations the gang was reserved at %s and admitted at %s, want starved (never, -1s)",
			without.reservedAt, without.gangAdmitted)
	}
}
