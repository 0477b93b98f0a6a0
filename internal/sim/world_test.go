package sim

import (
	"iter"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// TestEventsOrder checks the event heap pops by time, then in insertion order.
func TestEventsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h events
	for seq := 1; seq <= 500; seq++ {
		h.Push(event{at: Epoch.Add(time.Duration(rng.IntN(50)) * time.Second), seq: seq})
		if rng.IntN(3) == 0 {
			h.Pop()
		}
	}
	prev := h.Pop()
	for len(h) > 0 {
		ev := h.Pop()
		if ev.at.Before(prev.at) || ev.at.Equal(prev.at) && ev.seq < prev.seq {
			t.Fatalf("popped %v #%d after %v #%d", ev.at, ev.seq, prev.at, prev.seq)
		}
		prev = ev
	}
}

// forecaster is a pod-by-pod scheduler that also forecasts, whatever the test says.
type forecaster struct {
	*PodByPod
	made   time.Time
	starts map[string]time.Time
}

func (f *forecaster) Forecast() (time.Time, iter.Seq2[string, time.Time]) {
	return f.made, maps.All(f.starts)
}

// TestPredictedOnce checks that a job keeps the first start forecast for it, and that
// jobs already whole get none (notePrediction only looks for jobs in w.unpredicted).
func TestPredictedOnce(t *testing.T) {
	f := &forecaster{PodByPod: NewPodByPod()}
	w := New(f)
	w.AddNode(gpuNode("n", 8))
	a := &Job{Name: "a", Workers: 1, GPU: 8, RunFor: time.Hour}
	b := &Job{Name: "b", Workers: 1, GPU: 8, RunFor: time.Hour}
	c := &Job{Name: "c", Workers: 1, GPU: 8, RunFor: time.Hour}
	w.Submit(a)
	w.RunFor(time.Minute) // a is whole before any forecast
	w.Submit(b)
	w.Submit(c)
	at := func(d time.Duration) time.Time { return Epoch.Add(d) }
	f.made, f.starts = at(time.Minute), map[string]time.Time{b.GroupKey(): at(time.Hour)}
	w.RunFor(time.Minute)
	f.made, f.starts = at(2*time.Minute), map[string]time.Time{
		a.GroupKey(): at(3 * time.Hour), b.GroupKey(): at(2 * time.Hour), c.GroupKey(): at(4 * time.Hour)}
	w.RunFor(time.Minute)
	for _, tc := range []struct {
		j    *Job
		want time.Time
	}{{a, time.Time{}}, {b, at(time.Hour)}, {c, at(4 * time.Hour)}} {
		if !tc.j.Predicted.Equal(tc.want) {
			t.Errorf("%s predicted at %v, want %v", tc.j.Name, tc.j.Predicted, tc.want)
		}
	}
}

// TestBoundGPUs checks the GPUs a job counts bound (from Job.GPU) against its pods'
// requests.
func TestBoundGPUs(t *testing.T) {
	w := New(NewPodByPod())
	w.AddNode(gpuNode("n0", 8))
	w.AddNode(gpuNode("n1", 8))
	j := &Job{Name: "j", Workers: 3, GPU: 4, RunFor: time.Hour, ReadyAfter: time.Minute}
	w.Submit(j)
	w.RunFor(30 * time.Second)
	var want int64
	n := 0
	for _, p := range w.Pods("j") {
		if p.Spec.NodeName != "" {
			want += cluster.PodRequests(p)[GPU]
			n++
		}
	}
	if gpus, bound := j.boundGPUs(w); gpus != want || bound != n || n == 0 {
		t.Errorf("boundGPUs = %d GPUs of %d pods, want %d of %d", gpus, bound, want, n)
	}
}

// TestFirstWait checks that a job records why muster's engine left it waiting on its
// first decision: nothing for one admitted at once, Unschedulable for one that fits no
// node, and nothing more once it waited on (a later reason is not its first).
func TestFirstWait(t *testing.T) {
	w := New(NewEngineWith(0))
	w.AddNode(gpuNode("n", 8))
	a := &Job{Name: "a", Workers: 1, GPU: 8, RunFor: time.Hour}
	b := &Job{Name: "b", Workers: 1, GPU: 4, RunFor: time.Hour}
	w.Submit(a)
	w.RunFor(time.Minute)
	w.Submit(b)
	w.RunFor(2 * time.Hour)
	if a.FirstWait != "" || b.FirstWait != string(placement.Unschedulable) {
		t.Errorf("first waits a %q, b %q; want none for a (admitted at once), %q for b", a.FirstWait, b.FirstWait, placement.Unschedulable)
	}
	if b.Whole.IsZero() || !b.Whole.After(b.Submitted) {
		t.Errorf("b whole at %v, submitted %v: want it to start once a ended", b.Whole, b.Submitted)
	}
}
