package queue_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/queue"
)

func TestScheduleFairness(t *testing.T) {
	tests := []scheduleCase{{
		// team-a's running group holds 8 GPUs (on nodes not shown): team-b's later group
		// goes first and takes the free node.
		name:    "the queue holding less goes first",
		nodes:   gpuNodes("n", 1, 8),
		queues:  []queue.Queue{{Name: "team-a"}, {Name: "team-b"}},
		charged: map[string]cluster.Resources{"running": gpus(8)},
		entries: []*entryBuilder{
			entry("a", 1, 8),
			entry("b", 1, 8).in("team-b").at(time.Second),
		},
		want: []string{
			"admit b {nvidia.com/gpu: 8} on n-0",
			"wait a #1: 0 of minMember 1 members can be placed now; a-worker-0 {nvidia.com/gpu: 8}: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu",
		},
	}, {
		name:   "equal shares take turns, in queue order",
		nodes:  gpuNodes("n", 1, 4),
		queues: []queue.Queue{{Name: "team-a"}, {Name: "team-b"}},
		entries: []*entryBuilder{
			entry("a1", 1, 1), entry("a2", 1, 1).at(time.Second), entry("a3", 1, 1).at(2 * time.Second),
			entry("b1", 1, 1).in("team-b").at(3 * time.Second), entry("b2", 1, 1).in("team-b").at(4 * time.Second),
		},
		want: []string{
			"admit a1 {nvidia.com/gpu: 1} on n-0",
			"admit b1 {nvidia.com/gpu: 1} on n-0",
			"admit a2 {nvidia.com/gpu: 1} on n-0",
			"admit b2 {nvidia.com/gpu: 1} on n-0",
			"wait a3 #1: 0 of minMember 1 members can be placed now; a3-worker-0 {nvidia.com/gpu: 1}: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu",
		},
	}, {
		// Shares per weight: after a1 team-a is at 1/8, after b1 team-b at 1/4, so
		// team-a takes a second group before team-b its second.
		name:   "weight 2 takes two turns to weight 1's one",
		nodes:  gpuNodes("n", 1, 4),
		queues: []queue.Queue{{Name: "team-a", Weight: 2}, {Name: "team-b", Weight: 1}},
		entries: []*entryBuilder{
			entry("b1", 1, 1).in("team-b"), entry("b2", 1, 1).in("team-b").at(time.Second),
			entry("a1", 1, 1).at(2 * time.Second), entry("a2", 1, 1).at(3 * time.Second), entry("a3", 1, 1).at(4 * time.Second),
		},
		want: []string{
			"admit b1 {nvidia.com/gpu: 1} on n-0",
			"admit a1 {nvidia.com/gpu: 1} on n-0",
			"admit a2 {nvidia.com/gpu: 1} on n-0",
			"admit b2 {nvidia.com/gpu: 1} on n-0",
			"wait a3 #1: 0 of minMember 1 members can be placed now; a3-worker-0 {nvidia.com/gpu: 1}: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu",
		},
	}, {
		name:    "group priority comes before fairness",
		nodes:   gpuNodes("n", 1, 4),
		queues:  []queue.Queue{{Name: "team-a"}, {Name: "team-b"}},
		charged: map[string]cluster.Resources{"running": gpus(4)},
		entries: []*entryBuilder{
			entry("a", 1, 4).prio(10),
			entry("b", 1, 4).in("team-b"),
		},
		want: []string{
			"admit a {nvidia.com/gpu: 4} on n-0",
			"wait b #1: 0 of minMember 1 members can be placed now; b-worker-0 {nvidia.com/gpu: 4}: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu",
		},
	}, {
		name:    "queue priority comes before fairness",
		nodes:   gpuNodes("n", 1, 4),
		queues:  []queue.Queue{{Name: "team-a", Priority: 1}, {Name: "team-b"}},
		charged: map[string]cluster.Resources{"running": gpus(4)},
		entries: []*entryBuilder{
			entry("b", 1, 4).in("team-b"),
			entry("a", 1, 4).at(time.Second),
		},
		want: []string{
			"admit a {nvidia.com/gpu: 4} on n-0",
			"wait b #1: 0 of minMember 1 members can be placed now; b-worker-0 {nvidia.com/gpu: 4}: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func TestWeightedShare(t *testing.T) {
	capacity := cluster.Resources{gt.GPU: 16, "cpu": 64000}
	for _, c := range []struct {
		used   cluster.Resources
		weight int32
		want   float64
	}{
		{nil, 1, 0},
		{cluster.Resources{gt.GPU: 4, "cpu": 8000}, 1, 0.25},  // GPU dominates
		{cluster.Resources{gt.GPU: 4, "cpu": 32000}, 1, 0.5},  // CPU dominates
		{cluster.Resources{gt.GPU: 4, "cpu": 32000}, 2, 0.25}, // per unit of weight
		{cluster.Resources{gt.GPU: 4}, 0, 0.25},               // weight 0 counts as 1
		{cluster.Resources{gt.GPU: 4, "example.com/fpga": 2}, 1, 0.25},
	} {
		if got := queue.WeightedShare(c.used, capacity, c.weight); got != c.want {
			t.Errorf("WeightedShare(%s, weight %d): expected %v, found %v", c.used, c.weight, c.want, got)
		}
	}
}

// TestFairShareConverges checks, on random weights, that queues which all keep asking
// for one-GPU groups end as weighted max-min fairness would have them: no queue holds
// more than one group beyond its weighted share of another's, (a_q - 1) / w_q <= a_r / w_r.
func TestFairShareConverges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gpusTotal := rapid.IntRange(1, 40).Draw(t, "gpus")
		weights := rapid.SliceOfN(rapid.Int32Range(1, 4), 2, 4).Draw(t, "weights")
		m := queue.New(queue.Options{StarvationThreshold: time.Hour})
		for i, w := range weights {
			name := fmt.Sprintf("q%d", i)
			m.SetQueue(queue.Queue{Name: name, Weight: w})
			for j := range gpusTotal {
				at := time.Duration(rapid.IntRange(0, 1000).Draw(t, "at")) * time.Millisecond
				m.Push(entry(fmt.Sprintf("%s-%d", name, j), 1, 1).in(name).at(at).build())
			}
		}
		res := m.Schedule(cluster.New(gpuNodes("n", 1, int64(gpusTotal)), nil), t0.Add(time.Minute))
		if len(res.Admitted) != gpusTotal {
			t.Fatalf("expected %d groups admitted, found %d", gpusTotal, len(res.Admitted))
		}
		held := map[string]int64{}
		for _, a := range res.Admitted {
			held[a.Queue]++
		}
		for i, wq := range weights {
			for j, wr := range weights {
				q, r := fmt.Sprintf("q%d", i), fmt.Sprintf("q%d", j)
				if i != j && held[q] > 0 && (held[q]-1)*int64(wr) > held[r]*int64(wq) {
					t.Fatalf("%s (weight %d) holds %d and %s (weight %d) %d: more than its weighted share", q, wq, held[q], r, wr, held[r])
				}
			}
		}
	})
}
