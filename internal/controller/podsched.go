package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
)

// Pending members of a waiting group carry PodScheduled=False, as kube-scheduler writes
// it on a pod it tried and could not place: cluster-autoscaler and Karpenter scale up
// only for pods with reason Unschedulable (docs/integrations.md). muster writes that
// reason only for a group that does not fit the nodes; a group that waits on its queue
// (quota, a queue it may not use), on a reservation or on a preemption in flight gets
// its own reason, so that no node is bought that would not let it start.

// podScheduledQPS and podScheduledBurst bound the PodScheduled writes per second: a
// queue of 10,000 pods that all start to wait at once is written over minutes, not in
// one burst that competes with the binds for the API server. A pod's newer condition
// replaces its queued older one, so the backlog is at most one write per pending pod.
const (
	podScheduledQPS   = 20
	podScheduledBurst = 100
)

// podCond is the PodScheduled=False condition muster wants on a pod: its reason and
// message.
type podCond struct{ Reason, Message string }

// condMode says what muster writes on a group's unbound members.
type condMode int

const (
	// leaveAlone: the group is admitted; the binding sets PodScheduled=True.
	leaveAlone condMode = iota
	// writeCond: the group waits; its members get the condition.
	writeCond
	// correctStale: the group does not wait (it gathers its members, backs off, is
	// stopped or over); a member that still says Unschedulable gets the condition
	// instead, so that no autoscaler adds nodes for it.
	correctStale
)

// Reasons of the PodScheduled=False condition muster writes besides Unschedulable
// (corev1.PodReasonUnschedulable) and the queue's own reasons (queue.ReasonKind).
const (
	// ReasonPreempting: the group fits once the groups muster preempts for it have
	// released their nodes; kube-scheduler says so with nominatedNodeName.
	ReasonPreempting = "Preempting"
)

// podScheduledFor returns the condition the unbound members of a group with status
// st are to carry, and what to do with it. A group that does not fit the nodes, now
// (Unschedulable) or even empty (Impossible: nodes of another shape may fit it), is
// Unschedulable with the group's waiting reason, the text of its own Unschedulable
// condition. Any other wait keeps that text under the kind of the wait as its reason
// (QuotaExceeded, QueueNotFound, Reserved, ...).
func podScheduledFor(st engine.Status) (podCond, condMode) {
	switch {
	case st.Invalid != "":
		return podCond{ReasonInvalidGroup, st.Invalid}, writeCond
	case st.Wait != nil && (st.Phase == lifecycle.Queued || st.Phase == lifecycle.Impossible):
		reason := st.WaitingKind
		switch {
		case len(st.Preempting) > 0:
			reason = ReasonPreempting
		case st.Wait.Kind == queue.Placement:
			reason = corev1.PodReasonUnschedulable
		}
		return podCond{reason, st.Waiting}, writeCond
	case st.Phase == lifecycle.Binding || st.Phase == lifecycle.Starting ||
		st.Phase == lifecycle.Running || st.Phase == lifecycle.Recovering:
		return podCond{}, leaveAlone
	}
	reason, message := phaseReason(st)
	if reason == corev1.PodReasonUnschedulable {
		reason = ReasonNotWaiting // the lifecycle's reason of a group no longer queued
	}
	return podCond{reason, message}, correctStale
}

// podCondOf returns pod's PodScheduled condition, or nil.
func podCondOf(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// carries reports whether pod already carries c as PodScheduled=False.
func carries(p *corev1.Pod, c podCond) bool {
	cur := podCondOf(p)
	return cur != nil && cur.Status == corev1.ConditionFalse && cur.Reason == c.Reason && cur.Message == c.Message
}

// saysUnschedulable reports whether pod says PodScheduled=False, reason Unschedulable.
func saysUnschedulable(p *corev1.Pod) bool {
	cur := podCondOf(p)
	return cur != nil && cur.Status == corev1.ConditionFalse && cur.Reason == corev1.PodReasonUnschedulable
}

// podScheduled writes the PodScheduled condition of the unbound members of muster's
// groups. The loop decides, per group, the condition its members are to carry (sync)
// and queues a write per pod that does not carry it as muster's informer last saw it;
// a writer sends them off the loop, within podScheduledQPS, each with the pod's
// resourceVersion as a precondition, so that a write never undoes the
// PodScheduled=True a binding set meanwhile.
type podScheduled struct {
	*kit
	eng    *engine.Engine
	mirror *mirror
	writes workqueue.TypedDelayingInterface[podWrite]
	budget flowcontrol.RateLimiter

	mu sync.Mutex
	// wanted holds, per group and pod key, the condition to write on the pod that it
	// was not seen with yet: queued, being written, or written and not yet seen.
	wanted map[string]map[string]*wantedCond
	// notes holds, per pod key, the condition podNotes has to say on a pod whose group
	// the engine does not know: queued or being written.
	notes map[string]*wantedCond

	// decided holds, per waiting group, the condition decided for its members and
	// when; owned by the loop.
	decided map[string]decidedCond
}

// podWrite names one pod's queued write: its group, its key, and whether it is a
// note (see note).
type podWrite struct {
	group, pod string
	note       bool
}

// wantedCond is the condition to write on one pod; sent is set once the writer took
// it, with the resourceVersion it wrote against in from. failures counts a note's
// failed writes (see noteRetry); only the writer's goroutine uses it.
type wantedCond struct {
	cond     podCond
	sent     bool
	from     string
	failures int
}

// decidedCond is a group's members' condition and when it was decided.
type decidedCond struct {
	cond podCond
	at   time.Time
}

func newPodScheduled(k *kit, eng *engine.Engine, m *mirror) *podScheduled {
	return &podScheduled{
		kit: k, eng: eng, mirror: m,
		writes: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[podWrite]{Name: "podscheduled"}),
		budget: flowcontrol.NewTokenBucketRateLimiter(podScheduledQPS, podScheduledBurst),
		wanted: map[string]map[string]*wantedCond{}, notes: map[string]*wantedCond{},
		decided: map[string]decidedCond{},
	}
}

// forget drops what is kept of a group: its decision and its members' queued writes.
func (w *podScheduled) forget(key string) {
	delete(w.decided, key)
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.wanted, key)
}

func (w *podScheduled) groups(set map[string]struct{}) {
	addKeys(set, w.decided)
	w.mu.Lock()
	defer w.mu.Unlock()
	addKeys(set, w.wanted)
}

// sync decides the condition of the unbound members of the groups an Event of the
// pass names (a lifecycle transition, a new kind of wait: what changes the condition's
// reason), and of the groups swept (every group once per summaryPeriod, which also
// carries a waiting group's newer message), and queues a write for each member that
// does not carry it. Groups whose pods merely changed cost nothing here.
func (w *podScheduled) sync(events []engine.Event, swept []string) {
	seen := map[string]bool{}
	for _, ev := range events {
		if !seen[ev.Group] {
			seen[ev.Group] = true
			w.syncGroup(ev.Group)
		}
	}
	for _, key := range swept {
		if !seen[key] {
			seen[key] = true
			w.syncGroup(key)
		}
	}
}

// syncGroup queues the writes a group's unbound members need, and drops the queued
// writes of members that are gone, bound or carry their condition already.
func (w *podScheduled) syncGroup(key string) {
	pods := w.pending(key)
	if len(pods) == 0 {
		w.forget(key)
		return
	}
	st, ok := w.eng.Group(key)
	if !ok {
		w.forget(key)
		return
	}
	cond, mode := podScheduledFor(st)
	if mode != writeCond {
		delete(w.decided, key)
	} else {
		cond = w.decide(key, cond)
	}
	// The engine knows the pods of a group whose object it has not seen, and says
	// nothing of it (its phase is "" and it is valid): a note on them stays.
	known := st.Phase != "" || st.Invalid != ""
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := map[string]*wantedCond{}
	for _, p := range pods {
		pk := podKey(p)
		if known {
			// Its word on the group replaces the note, which is said again if the
			// group's object goes missing again.
			delete(w.notes, pk)
			w.mirror.notes.forget(pk)
		}
		if mode == leaveAlone || carries(p, cond) || (mode == correctStale && !saysUnschedulable(p)) {
			continue
		}
		kept[pk] = w.want(key, pk, p, cond)
	}
	if len(kept) == 0 {
		delete(w.wanted, key)
		return
	}
	w.wanted[key] = kept
}

// pending returns a group's members that muster schedules and that wait for a node:
// unbound, not being deleted, not held by a scheduling gate (kube-scheduler says
// SchedulingGated on those itself).
func (w *podScheduled) pending(key string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range w.mirror.memberList(key) {
		if w.mirror.isOurs(p) && p.Spec.NodeName == "" && p.DeletionTimestamp == nil &&
			p.Status.Phase == corev1.PodPending && len(p.Spec.SchedulingGates) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// decide returns the condition a waiting group's members are to carry: cond when its
// reason differs from the one decided last, or its message does and the last decision
// is older than refreshEvery, over the groups decided (a waiting group's diagnosis
// counts nodes and members and may change on every pass; the group's own condition is
// rewritten as often).
func (w *podScheduled) decide(key string, cond podCond) podCond {
	now := w.clock.Now()
	last, ok := w.decided[key]
	if ok && (last.cond == cond || (last.cond.Reason == cond.Reason && now.Sub(last.at) < refreshEvery(len(w.decided)))) {
		return last.cond
	}
	w.decided[key] = decidedCond{cond: cond, at: now}
	return cond
}

// want returns the wanted write of cond on pod p of group key, queueing it unless the
// same is queued already, or written and not yet seen by the informer. A newer
// condition replaces an older one not yet written. w.mu is held.
func (w *podScheduled) want(key, pk string, p *corev1.Pod, cond podCond) *wantedCond {
	if old := w.wanted[key][pk]; old != nil && old.cond == cond {
		if !old.sent || old.from == "" || old.from == p.ResourceVersion {
			return old // queued, being written, or written and not yet seen
		}
	} else if old != nil && !old.sent {
		w.metrics.PodScheduledDropped.WithLabelValues("superseded").Inc()
	}
	wc := &wantedCond{cond: cond}
	w.writes.Add(podWrite{group: key, pod: pk})
	return wc
}

// note queues the write of cond on p, a member of group key that the engine does not
// know (its object is missing, or no object can have its name): podNotes says why on
// the pod through this writer, off the loop, against the pod's resourceVersion like any
// other write. Once the engine has the group's object, its condition replaces the note
// (syncGroup). A note is kept until it is written, or dropped.
func (w *podScheduled) note(key string, p *corev1.Pod, cond podCond) {
	pk := podKey(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.notes[pk]; old != nil && !old.sent {
		w.metrics.PodScheduledDropped.WithLabelValues("superseded").Inc()
	}
	w.notes[pk] = &wantedCond{cond: cond}
	w.writes.Add(podWrite{group: key, pod: pk, note: true})
}

// entry returns the write wanted for item, or nil; w.mu is held.
func (w *podScheduled) entry(item podWrite) *wantedCond {
	if item.note {
		return w.notes[item.pod]
	}
	return w.wanted[item.group][item.pod]
}

// run writes the queued conditions until ctx is done.
func (w *podScheduled) run(ctx context.Context) { drain(ctx, 1, w.writes, w.writeNext) }

// writeNext writes the next queued condition, within the budget; false once the queue
// is shut down.
func (w *podScheduled) writeNext(ctx context.Context) bool {
	item, quit := w.writes.Get()
	if quit {
		return false
	}
	defer w.writes.Done(item)
	wc := w.take(item)
	if wc == nil {
		return true // forgotten, dropped or written since it was queued
	}
	if !w.budget.TryAccept() {
		w.metrics.PodScheduledThrottled.Inc()
		if err := w.budget.Wait(ctx); err != nil {
			return true // ctx is done
		}
	}
	result := w.write(ctx, item, wc)
	switch {
	case result == "conflict":
		w.again(item, wc, conflictRetry)
	case result == "failed" && item.note:
		// A note is said once (podNotes): nothing would ask for it again.
		w.again(item, wc, noteRetry(wc))
	case result != "written" || item.note:
		// A group's condition written stays wanted until the informer shows it
		// (want); a note is said once (podNotes) and has nothing to wait for.
		w.done(item, wc)
	}
	if result != dropped {
		w.metrics.PodScheduledWrites.WithLabelValues(result).Inc()
	}
	return true
}

// take returns the condition queued for item and marks it being written, or nil.
func (w *podScheduled) take(item podWrite) *wantedCond {
	w.mu.Lock()
	defer w.mu.Unlock()
	wc := w.entry(item)
	if wc == nil || wc.sent {
		return nil
	}
	wc.sent = true
	return wc
}

// done drops the write of wc for item, unless a newer one replaced it: the next pass
// decides again from what the informer shows.
func (w *podScheduled) done(item podWrite, wc *wantedCond) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.entry(item) != wc:
	case item.note:
		delete(w.notes, item.pod)
	default:
		delete(w.wanted[item.group], item.pod)
	}
}

// podWriteTimeout bounds one PodScheduled write: the writer is one goroutine, and a
// request the API server never answers must not hold up every other pod's condition.
const podWriteTimeout = time.Minute

// conflictRetry is how long the writer waits before it writes again a condition whose
// write met a pod that had changed since the informer saw it: by then the informer
// shows the change (a bind, and the write is dropped) or the write goes against it.
const conflictRetry = time.Second

// noteRetryMax bounds the wait before a note whose write failed is written again: the
// first waits conflictRetry, each next one twice as long.
const noteRetryMax = time.Minute

// noteRetry is how long to wait before the note wc, whose write failed, is written
// again; it counts the failure.
func noteRetry(wc *wantedCond) time.Duration {
	wc.failures++
	return min(conflictRetry<<min(wc.failures-1, 6), noteRetryMax)
}

// again queues the write of wc for item once more after delay, unless a newer one
// replaced it.
func (w *podScheduled) again(item podWrite, wc *wantedCond, delay time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.entry(item) == wc {
		wc.sent, wc.from = false, ""
		w.writes.AddAfter(item, delay)
	}
}

// current reports whether wc is still the condition wanted for item.
func (w *podScheduled) current(item podWrite, wc *wantedCond, from string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.entry(item) != wc {
		return false
	}
	wc.from = from
	return true
}

// write patches the pod's PodScheduled condition through pods/status, as
// kube-scheduler does, against the resourceVersion the informer shows, which must
// show the pod unbound: a bind since makes the patch fail with a conflict, and it is
// dropped. It returns the result for muster_pod_scheduled_writes_total (written,
// conflict, failed), or dropped when it sent nothing.
func (w *podScheduled) write(ctx context.Context, item podWrite, wc *wantedCond) string {
	p := &corev1.Pod{}
	if err := w.cache.Get(ctx, splitKey(item.pod), p); err != nil {
		if apierrors.IsNotFound(err) {
			return w.drop("gone")
		}
		w.log.Error(err, "reading a pod from the cache", "pod", item.pod)
		return "failed"
	}
	switch {
	case p.Spec.NodeName != "":
		return w.drop("bound")
	case carries(p, wc.cond):
		return w.drop("unchanged")
	case !w.current(item, wc, p.ResourceVersion):
		return w.drop("superseded")
	}
	data, err := json.Marshal(podCondPatch(p, wc.cond, w.clock.Now()))
	if err != nil {
		w.log.Error(err, "encoding a PodScheduled patch", "pod", item.pod)
		return "failed"
	}
	ctx, cancel := context.WithTimeout(ctx, podWriteTimeout)
	defer cancel()
	_, err = w.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	switch {
	case err == nil:
		return "written"
	case apierrors.IsConflict(err):
		return "conflict" // the pod changed since the informer saw it: tried again after conflictRetry
	case apierrors.IsNotFound(err):
		return w.drop("gone")
	}
	w.log.Error(fmt.Errorf("patching pod %s status: %w", item.pod, err), "writing PodScheduled", "reason", wc.cond.Reason)
	return "failed"
}

// dropped is write's result for a write it did not send.
const dropped = "dropped"

// drop counts a queued write dropped for reason, unsent, and returns dropped.
func (w *podScheduled) drop(reason string) string {
	w.metrics.PodScheduledDropped.WithLabelValues(reason).Inc()
	return dropped
}

// podCondPatch returns the strategic merge patch that sets PodScheduled=False with
// cond on p, against p's resourceVersion. The transition time moves only when the
// condition's status does, as podutil.UpdatePodCondition keeps it.
func podCondPatch(p *corev1.Pod, cond podCond, now time.Time) map[string]any {
	since := metav1.NewTime(now)
	if cur := podCondOf(p); cur != nil && cur.Status == corev1.ConditionFalse {
		since = cur.LastTransitionTime
	}
	return map[string]any{
		"metadata": map[string]any{"resourceVersion": p.ResourceVersion},
		"status": map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: cond.Reason, Message: cond.Message, LastTransitionTime: since,
		}}},
	}
}
