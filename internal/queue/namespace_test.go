package queue_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/queue"
)

// TestQueueAdmitsOnlyItsNamespaces: a group may use only a queue that admits its
// namespace; a queue with no namespace set (no object behind it) admits every
// namespace, an empty set admits none, and a group that names no queue while several
// admit its namespace waits, naming them, instead of being charged to one of them.
func TestQueueAdmitsOnlyItsNamespaces(t *testing.T) {
	m := queue.New(queue.Options{})
	m.SetQueue(queue.Queue{Name: "team-a", Quota: gpus(8), Namespaces: map[string]bool{"a": true}})
	m.SetQueue(queue.Queue{Name: "closed", Namespaces: map[string]bool{}})
	m.SetQueue(queue.Queue{Name: "open"})
	push := func(key, q, ns string, candidates ...string) {
		e := entry(key, 1, 1).in(q).build()
		e.Namespace, e.Candidates = ns, candidates
		m.Push(e)
	}
	push("own", "team-a", "a")
	push("stranger", "team-a", "b")
	push("shut-out", "closed", "a")
	push("anyone", "open", "b")
	push("undecided", "", "c", "team-a", "team-b")
	push("one-candidate", "open", "c", "open")

	got := summary(m.Schedule(cluster.New(gpuNodes("n", 8, 1), nil), t0))

	want := []string{
		"admit anyone {nvidia.com/gpu: 1} on n-0",
		"admit own {nvidia.com/gpu: 1} on n-1",
		"admit one-candidate {nvidia.com/gpu: 1} on n-2",
		`wait shut-out #1: queue "closed" does not admit namespace "a": its spec.namespaceSelector does not select the namespace`,
		`wait undecided #1: names no queue, and 2 queues admit namespace "c": team-a, team-b; name one with the muster.dev/queue annotation`,
		`wait stranger #1: queue "team-a" does not admit namespace "b": its spec.namespaceSelector does not select the namespace`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Schedule (-want +got):\n%s", diff)
	}
	if r := (queue.Reason{Kind: queue.QueueNotAllowed}); r.Impossible() {
		t.Errorf("QueueNotAllowed counted as impossible: it must wait for the queue or namespace to change")
	}
}

// TestSetQueueCopiesNamespaces: the caller's namespace set may change after SetQueue
// without changing the queue.
func TestSetQueueCopiesNamespaces(t *testing.T) {
	m := queue.New(queue.Options{})
	ns := map[string]bool{"a": true}
	m.SetQueue(queue.Queue{Name: "team-a", Namespaces: ns})
	delete(ns, "a")
	e := entry("job", 1, 1).build()
	e.Namespace = "a"
	m.Push(e)
	if res := m.Schedule(cluster.New(gpuNodes("n", 1, 1), nil), t0); len(res.Admitted) != 1 {
		t.Errorf("expected job admitted through the namespaces set at SetQueue, got %v", summary(res))
	}
}
