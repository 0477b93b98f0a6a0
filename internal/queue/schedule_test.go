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

// scheduleCase is one Schedule call on a fresh Manager.
type scheduleCase struct {
	name    string
	nodes   []*corev1.Node
	queues  []queue.Queue // default: team-a, unlimited
	charged map[string]cluster.Resources
	// chargedTo names the queue of a charged group; default team-a.
	chargedTo map[string]string
	entries   []*entryBuilder
	want      []string
}

func (tc scheduleCase) run(t *testing.T) {
	t.Helper()
	m := queue.New(queue.Options{StarvationThreshold: time.Hour})
	queues := tc.queues
	if queues == nil {
		queues = []queue.Queue{{Name: "team-a"}}
	}
	for _, q := range queues {
		m.SetQueue(q)
	}
	for key, r := range tc.charged {
		q := tc.chargedTo[key]
		if q == "" {
			q = "team-a"
		}
		m.Charge(key, q, r)
	}
	for _, e := range tc.entries {
		m.Push(e.build())
	}
	got := summary(m.Schedule(cluster.New(tc.nodes, nil), t0.Add(time.Minute)))
	if diff := cmp.Diff(tc.want, got); diff != "" {
		t.Errorf("Schedule (-want +got):\n%s", diff)
	}
}

func TestScheduleOrder(t *testing.T) {
	tests := []scheduleCase{{
		name:  "priority, then queue time, then key",
		nodes: gpuNodes("n", 1, 8),
		entries: []*entryBuilder{
			entry("late", 1, 1).at(2 * time.Second),
			entry("b", 1, 1),
			entry("a", 1, 1),
			entry("urgent", 1, 1).at(3 * time.Second).prio(10),
		},
		want: []string{
			"admit urgent {nvidia.com/gpu: 1} on n-0",
			"admit a {nvidia.com/gpu: 1} on n-0",
			"admit b {nvidia.com/gpu: 1} on n-0",
			"admit late {nvidia.com/gpu: 1} on n-0",
		},
	}, {
		name:  "requeued groups go behind never-failed ones of their priority only",
		nodes: gpuNodes("n", 1, 8),
		entries: []*entryBuilder{
			entry("retry", 1, 1).requeued(),
			entry("fresh", 1, 1).at(time.Second),
			entry("low", 1, 1).prio(-1),
		},
		want: []string{
			"admit fresh {nvidia.com/gpu: 1} on n-0",
			"admit retry {nvidia.com/gpu: 1} on n-0",
			"admit low {nvidia.com/gpu: 1} on n-0",
		},
	}, {
		name:   "queue priority before group priority",
		nodes:  gpuNodes("n", 1, 8),
		queues: []queue.Queue{{Name: "team-a"}, {Name: "prod", Priority: 1}},
		entries: []*entryBuilder{
			entry("a", 1, 1).prio(100),
			entry("p", 1, 1).in("prod"),
		},
		want: []string{
			"admit p {nvidia.com/gpu: 1} on n-0",
			"admit a {nvidia.com/gpu: 1} on n-0",
		},
	}, {
		name:  "the first in order wins the last free GPUs",
		nodes: gpuNodes("n", 1, 8),
		entries: []*entryBuilder{
			entry("second", 8, 1).at(time.Second),
			entry("first", 8, 1),
		},
		want: []string{
			"admit first {nvidia.com/gpu: 8} on n-0",
			"wait second #1: 0 of minMember 8 members can be placed now; second-worker-0 ×8 {nvidia.com/gpu: 1}: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func TestScheduleBackfill(t *testing.T) {
	tests := []scheduleCase{{
		name:  "a group that does not fit does not block smaller ones",
		nodes: gpuNodes("n", 3, 4),
		entries: []*entryBuilder{
			entry("first", 4, 1),
			entry("big", 12, 1).at(time.Second),
			entry("small", 2, 1).at(2 * time.Second),
			entry("one", 1, 1).at(3 * time.Second),
		},
		want: []string{
			"admit first {nvidia.com/gpu: 4} on n-0",
			"admit small {nvidia.com/gpu: 2} on n-1",
			"admit one {nvidia.com/gpu: 1} on n-1",
			"wait big #1: 8 of minMember 12 members can be placed now; big-worker-0 ×12 {nvidia.com/gpu: 1}: 2/3 nodes are available: 1 Insufficient nvidia.com/gpu",
		},
	}, {
		name:  "an impossible group waits, said so, and others pass it",
		nodes: gpuNodes("n", 2, 4),
		entries: []*entryBuilder{
			entry("huge", 1, 8),
			entry("small", 1, 4).at(time.Second),
		},
		want: []string{
			"admit small {nvidia.com/gpu: 4} on n-0",
			"wait huge #1: huge-worker-0 needs 8 nvidia.com/gpu on one node; largest eligible node has 4 (impossible)",
		},
	}, {
		name:  "groups of one shape that fail are each diagnosed under their own name",
		nodes: gpuNodes("n", 1, 4),
		entries: []*entryBuilder{
			entry("a", 3, 1),
			entry("b", 3, 1).at(time.Second),
			entry("c", 3, 1).at(2 * time.Second),
		},
		want: []string{
			"admit a {nvidia.com/gpu: 3} on n-0",
			"wait b #1: 1 of minMember 3 members can be placed now; b-worker-0 ×3 {nvidia.com/gpu: 1}: 1/1 nodes are available",
			"wait c #2: 1 of minMember 3 members can be placed now; c-worker-0 ×3 {nvidia.com/gpu: 1}: 1/1 nodes are available",
		},
	}, {
		name:  "a failure stands only for groups of the same signature",
		nodes: []*corev1.Node{gt.Node("n-0").GPU(4).Label("pool", "a").Obj()},
		entries: []*entryBuilder{
			entry("picky", 1, 1).with(func(p *gt.PodBuilder) *gt.PodBuilder { return p.Selector("pool", "b") }),
			entry("plain", 1, 1).at(time.Second),
			entry("four", 4, 1).at(2 * time.Second),
			entry("two", 2, 1).min(1).at(3 * time.Second),
		},
		want: []string{
			"admit plain {nvidia.com/gpu: 1} on n-0",
			"admit two {nvidia.com/gpu: 2} on n-0",
			"wait picky #1: picky-worker-0 {nvidia.com/gpu: 1}: 0/1 nodes are eligible: 1 node(s) didn't match Pod's node affinity/selector (impossible)",
			"wait four #2: 3 of minMember 4 members can be placed now; four-worker-0 ×4 {nvidia.com/gpu: 1}: 1/1 nodes are available",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func TestScheduleQuota(t *testing.T) {
	teamA := []queue.Queue{{Name: "team-a", Quota: gpus(8)}}
	tests := []scheduleCase{{
		name:    "over quota with what is in use; a smaller group still fits",
		nodes:   gpuNodes("n", 2, 8),
		queues:  teamA,
		charged: map[string]cluster.Resources{"running": gpus(4)},
		entries: []*entryBuilder{
			entry("big", 8, 1),
			entry("small", 4, 1).at(time.Second),
		},
		want: []string{
			"admit small {nvidia.com/gpu: 4} on n-0",
			"wait big #1: needs 8 nvidia.com/gpu, queue team-a has 4 of 8 in use",
		},
	}, {
		name:   "groups admitted in the same call count",
		nodes:  gpuNodes("n", 2, 8),
		queues: teamA,
		entries: []*entryBuilder{
			entry("a", 6, 1),
			entry("b", 6, 1).at(time.Second),
		},
		want: []string{
			"admit a {nvidia.com/gpu: 6} on n-0",
			"wait b #1: needs 6 nvidia.com/gpu, queue team-a has 6 of 8 in use",
		},
	}, {
		name:   "more than the whole quota is impossible in the queue",
		nodes:  gpuNodes("n", 2, 8),
		queues: teamA,
		entries: []*entryBuilder{
			entry("huge", 16, 1),
		},
		want: []string{
			"wait huge #1: needs 16 nvidia.com/gpu, more than queue team-a's whole quota of 8 (impossible)",
		},
	}, {
		name:   "minCharge raises the charge",
		nodes:  gpuNodes("n", 2, 8),
		queues: []queue.Queue{{Name: "team-a", Quota: gpus(8)}},
		entries: []*entryBuilder{
			entry("a", 1, 1).floor(gpus(6)),
			entry("b", 4, 1).at(time.Second),
			entry("c", 2, 1).at(2 * time.Second),
		},
		want: []string{
			"admit a {nvidia.com/gpu: 6} on n-0",
			"admit c {nvidia.com/gpu: 2} on n-0",
			"wait b #1: needs 4 nvidia.com/gpu, queue team-a has 6 of 8 in use",
		},
	}, {
		name:   "resources the quota does not list are unlimited",
		nodes:  gpuNodes("n", 2, 8),
		queues: []queue.Queue{{Name: "team-a", Quota: cluster.Resources{corev1.ResourceCPU: 1000}}},
		entries: []*entryBuilder{
			entry("a", 16, 1),
		},
		want: []string{
			"admit a {nvidia.com/gpu: 16} on n-0,n-1",
		},
	}, {
		name:   "a zero quota admits nothing that asks for the resource",
		nodes:  gpuNodes("n", 1, 8),
		queues: []queue.Queue{{Name: "team-a", Quota: gpus(0)}},
		entries: []*entryBuilder{
			entry("a", 1, 1),
		},
		want: []string{
			"wait a #1: needs 1 nvidia.com/gpu, more than queue team-a's whole quota of 0 (impossible)",
		},
	}, {
		name:   "an unknown queue: the group waits, named",
		nodes:  gpuNodes("n", 1, 8),
		queues: teamA,
		entries: []*entryBuilder{
			entry("lost", 1, 1).in("team-x"),
			entry("ok", 1, 1).at(time.Second),
		},
		want: []string{
			"admit ok {nvidia.com/gpu: 1} on n-0",
			`wait lost #1: queue "team-x" does not exist`,
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}
