package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/queue"
)

// benchSchedule times one Schedule call deciding every group of entries on 1,000 nodes
// with 8 GPUs each; building the snapshot and queueing are not timed. The queues are
// queues, or team-a alone, unlimited.
func benchSchedule(b *testing.B, entries []queue.Entry, wantAdmitted int, queues ...queue.Queue) {
	nodes := gpuNodes("n", 1000, 8)
	if len(queues) == 0 {
		queues = []queue.Queue{{Name: "team-a"}}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		snap := cluster.New(nodes, nil)
		m := queue.New(queue.Options{StarvationThreshold: time.Hour})
		for _, q := range queues {
			m.SetQueue(q)
		}
		for _, e := range entries {
			m.Push(e)
		}
		b.StartTimer()
		res := m.Schedule(snap, t0)
		if len(res.Admitted) != wantAdmitted || len(res.Admitted)+len(res.Waiting) != len(entries) {
			b.Fatalf("admitted %d and left %d waiting of %d, want %d admitted",
				len(res.Admitted), len(res.Waiting), len(entries), wantAdmitted)
		}
	}
}

// BenchmarkSchedule10kSinglePodGroups decides 10,000 queued one-GPU single-pod groups on
// 8,000 GPUs in one call: 8,000 are admitted, the other 2,000 fail like the first of them.
func BenchmarkSchedule10kSinglePodGroups(b *testing.B) {
	entries := make([]queue.Entry, 10000)
	for i := range entries {
		entries[i] = entry(fmt.Sprintf("g-%05d", i), 1, 1).at(time.Duration(i) * time.Millisecond).build()
	}
	benchSchedule(b, entries, 8000)
}

// Benchmark500GangsOf8 decides 500 gangs of eight one-GPU members on 8,000 GPUs in one
// call; all are admitted.
func Benchmark500GangsOf8(b *testing.B) {
	entries := make([]queue.Entry, 500)
	for i := range entries {
		entries[i] = entry(fmt.Sprintf("g-%03d", i), 8, 1).at(time.Duration(i) * time.Millisecond).build()
	}
	benchSchedule(b, entries, 500)
}

// BenchmarkSchedule10kGroupsOverQuota decides 10,000 one-GPU groups spread over 16
// queues of 8 GPUs of quota each in one call: 128 are admitted, the others wait on
// their queue's quota, as a busy multi-team cluster's queue does on every pass.
func BenchmarkSchedule10kGroupsOverQuota(b *testing.B) {
	var queues []queue.Queue
	for i := range 16 {
		queues = append(queues, queue.Queue{Name: fmt.Sprintf("team-%02d", i), Quota: gpus(8)})
	}
	entries := make([]queue.Entry, 10000)
	for i := range entries {
		entries[i] = entry(fmt.Sprintf("g-%05d", i), 1, 1).in(queues[i%16].Name).at(time.Duration(i) * time.Millisecond).build()
	}
	benchSchedule(b, entries, 128, queues...)
}
