package sim

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// TestCompareInstantStarts checks the count of jobs started the instant they arrived,
// that a job b started at once counts as displaced only while a ran a job that b had
// not started yet, as arriving to a full cluster only when a's GPUs in use just
// before it arrived left fewer free than it asks, and otherwise by what kept it
// waiting under a: the reservation, GPUs taken at that instant, GPUs free on no one
// node, or another reason.
func TestCompareInstantStarts(t *testing.T) {
	at := func(m int) time.Time { return Epoch.Add(time.Duration(m) * time.Minute) }
	job := func(name string, gpu int64, workers int, submitted, whole, finished int) *Job {
		ready := time.Duration(20) * time.Second
		j := &Job{Name: name, GPU: gpu, Workers: workers, ReadyAfter: ready, Submitted: at(submitted)}
		if whole >= 0 {
			j.Whole, j.Ready = at(whole), at(whole).Add(ready)
		}
		if finished >= 0 {
			j.Finished = at(finished)
		}
		return j
	}
	world := func(jobs ...*Job) *World {
		w := &World{jobs: map[string]*Job{}, nodes: map[string]*corev1.Node{}, sched: NewPodByPod()}
		for _, j := range jobs {
			w.jobs[j.Name] = j
		}
		return w
	}
	waited := func(j *Job, kind string) *Job { j.FirstWait = kind; return j }
	a := world(
		job("gang", 4, 2, 0, 5, 35), // a started the gang first: running at 10m
		// Not at once under a, at once under b, while a ran the gang, and first told
		// the reservation kept it out.
		waited(job("x", 1, 1, 10, 15, 20), string(queue.Reserved)),
		job("y", 1, 1, 40, 40, 50), // at once under a only
		// At once under b only, while a ran only what b ran too; a said no node had
		// room, with 14 GPUs free.
		waited(job("z", 1, 1, 100, 110, 120), string(placement.Unschedulable)),
		job("both", 2, 1, 80, 90, 130),
		job("never", 1, 1, 200, -1, -1),
		// At once under b only; a gave its 16 free GPUs to others at that instant.
		waited(job("w", 1, 1, 60, 70, 80), string(placement.Unschedulable)),
		// At once under b only; a waited for another reason.
		waited(job("v", 1, 1, 140, 150, 160), string(queue.QuotaExceeded)),
	)
	b := world(
		job("gang", 4, 2, 0, 30, 60),
		job("x", 1, 1, 10, 10, 15),
		job("y", 1, 1, 40, 45, 55),
		job("z", 1, 1, 100, 100, 110),
		job("both", 2, 1, 80, 90, 130),
		job("never", 1, 1, 200, 200, 210),
		job("w", 1, 1, 60, 60, 65),
		job("v", 1, 1, 140, 140, 150),
		job("only-b", 1, 1, 300, 300, 310), // not in a: left out
	)
	a.AddNode(gpuNode("node-0", 8))
	a.AddNode(gpuNode("node-1", 8))
	a.occupancy = []Occupancy{
		{At: at(0)},
		{At: at(5), Useful: 8},
		{At: at(15), Useful: 9}, // x arrived at 10 with 8 of 16 free: not full
		{At: at(35)},
		{At: at(60), Useful: 16}, // w arrived at 60 with 16 free, all started on at once
		{At: at(65)},
		{At: at(90), Useful: 2}, // z arrived at 100 with 14 free: not full
		{At: at(130)},
		{At: at(190), Useful: 15, Held: 1},
		{At: at(200)}, // never arrived at 200 to a full cluster, freed that instant
	}
	got := CompareInstantStarts(a, b)
	want := InstantStarts{A: 1, B: 5, Lost: 5, Gained: 1, Displaced: 1, DisplacedGPUs: 8, Full: 1,
		Reserved: 1, Taken: 1, Scattered: 1, Other: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CompareInstantStarts (-want +got):\n%s", diff)
	}

	var out bytes.Buffer
	WriteInstantStarts(&out, []string{"pod-by-pod", "muster"}, []*World{b, a})
	if line := "muster 1, pod-by-pod 5; pod-by-pod started 5 at once that muster did not, 1 of them while muster ran jobs pod-by-pod had not started yet (8.0 GPUs on average), 1 when muster had fewer GPUs free than they ask " +
		"(of the other 4, 1 waited for a starving group's reservation, 1 for GPUs muster gave other jobs at that instant, 1 for GPUs free on no one node, 1 for another reason); " +
		"muster started 1 at once that pod-by-pod did not"; !strings.Contains(out.String(), line) {
		t.Errorf("WriteInstantStarts wrote\n%s\nwant a line with %q", out.String(), line)
	}
}
