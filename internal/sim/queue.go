package sim

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// podQueue holds the pending pods of a one-pod-at-a-time scheduler in order, and what it
// takes to skip work a real scheduler skips: pods that failed stay aside until capacity
// is freed (the unschedulable queue), and within one pass a shape that failed is not
// placed again, since the snapshot only fills up during a pass.
type podQueue struct {
	pods map[string]*queued
	// order is the pending pods, sorted by less when sorted is set; entries whose pod
	// left are dropped lazily.
	order  []*queued
	sorted bool
	less   func(a, b *queued) int
	// retryAll is set when capacity was freed: every pending pod is tried again.
	// Otherwise only pods never tried are.
	retryAll bool
	seq      int
}

// queued is one pending pod.
type queued struct {
	key   string
	pod   *corev1.Pod
	group string
	seq   int
	tried bool
	gone  bool
	// sig is the placement signature of the pod alone; gpus is its GPU request.
	sig  string
	gpus int64
}

func newPodQueue(less func(a, b *queued) int) *podQueue {
	return &podQueue{pods: map[string]*queued{}, less: less}
}

// set records an unbound pod as pending, or updates it.
func (q *podQueue) set(key string, p *corev1.Pod, group string) {
	if it := q.pods[key]; it != nil {
		it.pod, it.group = p, group
		return
	}
	q.seq++
	it := &queued{key: key, pod: p, group: group, seq: q.seq, sig: placement.Signature(single(key, p)), gpus: gpusOf(p)}
	q.pods[key] = it
	q.order = append(q.order, it)
	q.sorted = false
}

// remove drops a pod that was bound or deleted.
func (q *podQueue) remove(key string) {
	if it := q.pods[key]; it != nil {
		it.gone = true
		delete(q.pods, key)
	}
}

// pass returns the pods to try now, in order, and resets retryAll.
func (q *podQueue) pass() []*queued {
	q.order = slices.DeleteFunc(q.order, func(it *queued) bool { return it.gone })
	if !q.sorted {
		slices.SortStableFunc(q.order, q.less)
		q.sorted = true
	}
	all := q.retryAll
	q.retryAll = false
	out := make([]*queued, 0, len(q.order))
	for _, it := range q.order {
		if all || !it.tried {
			it.tried = true
			out = append(out, it)
		}
	}
	return out
}

// single is a placement request for one pod alone.
func single(key string, p *corev1.Pod) placement.Group {
	return placement.Group{Name: key, MinMember: 1, Members: []placement.Member{{Name: key, Pod: p}}}
}

// passState is what one pass knows without placing: shapes that failed, and the most
// GPUs free on any node (a pod asking for more cannot fit, whatever else it needs).
type passState struct {
	snap    *cluster.Snapshot
	failed  map[string]bool
	maxFree int64
}

func newPass(s *cluster.Snapshot) *passState {
	p := &passState{snap: s, failed: map[string]bool{}}
	p.update()
	return p
}

// update recomputes maxFree after a bind.
func (p *passState) update() {
	p.maxFree = 0
	for _, n := range p.snap.Nodes() {
		p.maxFree = max(p.maxFree, n.Free(GPU))
	}
}

// placeOne finds a node for one pod with muster's predicates, or "" when none fits, a pod
// of the same shape already failed in this pass, or no node has the GPUs it asks for.
func (p *passState) placeOne(it *queued) string {
	if it.gpus > p.maxFree || p.failed[it.sig] {
		return ""
	}
	plan, _ := placement.Place(p.snap, single(it.key, it.pod), placement.Options{})
	if plan == nil {
		p.failed[it.sig] = true
		return ""
	}
	node := plan.Assignments[0].Node
	plan.Revert()
	return node
}

// freesCapacity reports whether replacing old with p releases a node's capacity: a bound
// pod finished, failed or was deleted (p == nil).
func freesCapacity(s *cluster.Snapshot, key string, p *corev1.Pod) bool {
	if !s.Bound(key) {
		return false
	}
	return p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
