package sim

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCompareInstantStarts checks the count of jobs started the instant they arrived,
// and that a job b started at once counts as displaced only while a ran a job that b
// had not started yet.
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
		w := &World{jobs: map[string]*Job{}}
		for _, j := range jobs {
			w.jobs[j.Name] = j
		}
		return w
	}
	a := world(
		job("gang", 4, 2, 0, 5, 35),   // a started the gang first: running at 10m
		job("x", 1, 1, 10, 15, 20),    // not at once under a, at once under b, while a ran the gang
		job("y", 1, 1, 40, 40, 50),    // at once under a only
		job("z", 1, 1, 100, 110, 120), // at once under b only, while a ran only what b ran too
		job("both", 2, 1, 80, 90, 130),
		job("never", 1, 1, 200, -1, -1),
	)
	b := world(
		job("gang", 4, 2, 0, 30, 60),
		job("x", 1, 1, 10, 10, 15),
		job("y", 1, 1, 40, 45, 55),
		job("z", 1, 1, 100, 100, 110),
		job("both", 2, 1, 80, 90, 130),
		job("never", 1, 1, 200, 200, 210),
		job("only-b", 1, 1, 300, 300, 310), // not in a: left out
	)
	got := CompareInstantStarts(a, b)
	want := InstantStarts{A: 1, B: 3, Lost: 3, Gained: 1, Displaced: 1, DisplacedGPUs: 8}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CompareInstantStarts (-want +got):\n%s", diff)
	}

	var out bytes.Buffer
	WriteInstantStarts(&out, []string{"pod-by-pod", "muster"}, []*World{b, a})
	if line := "muster 1, pod-by-pod 3; pod-by-pod started 3 at once that muster did not, 1 of them while muster ran jobs pod-by-pod had not started yet (8.0 GPUs on average); muster started 1 at once that pod-by-pod did not"; !strings.Contains(out.String(), line) {
		t.Errorf("WriteInstantStarts wrote\n%s\nwant a line with %q", out.String(), line)
	}
}
