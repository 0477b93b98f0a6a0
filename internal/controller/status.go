package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/source"
)

// StatusAnnotation holds, as a JSON list of metav1.Condition, the conditions of a
// scheduler-plugins PodGroup, whose API has no conditions field.
const StatusAnnotation = source.StatusAnnotation

// The condition types muster writes on group objects.
const (
	ConditionAdmitted      = "Admitted"
	ConditionPodsReady     = "PodsReady"
	ConditionUnschedulable = "Unschedulable"
	ConditionImpossible    = "Impossible"
	ConditionEvicted       = "Evicted"
	ConditionFailed        = "Failed"
)

// podGroupPhase maps a lifecycle phase to a scheduler-plugins PodGroup phase.
func podGroupPhase(st engine.Status) spv1alpha1.PodGroupPhase {
	return source.CoschedulingPhase(st.Phase)
}

// reporter writes each group's status from the engine's: its conditions, in its API's
// form, and its lifecycle record, on the group object, or the record alone on a member
// pod for a group without one. It prepares the writes on the loop's goroutine and the
// status writer sends them. It owns what it last wrote per group.
type reporter struct {
	*kit
	eng    *engine.Engine
	mirror *mirror
	owners *owners
	writer *statusWriter
	// written holds the last status written per group, to write only changes.
	written map[string]string
	// conditions holds the conditions last written per group.
	conditions map[string][]metav1.Condition
	// recorded holds the lifecycle record last written per group.
	recorded map[string]string
	// phases holds the status.phase last written on each scheduler-plugins PodGroup.
	phases map[string]spv1alpha1.PodGroupPhase
	// significant and wroteAt hold, per group, the state last written and when.
	significant map[string]string
	wroteAt     map[string]time.Time
	// abandoned holds, per group, the significance of the status write the API server
	// refused for good: it is not tried again until the group's state changes.
	abandoned map[string]string
}

func newReporter(k *kit, eng *engine.Engine, m *mirror, o *owners) *reporter {
	return &reporter{
		kit: k, eng: eng, mirror: m, owners: o, writer: newStatusWriter(k.log),
		written: map[string]string{}, conditions: map[string][]metav1.Condition{}, recorded: map[string]string{},
		phases: map[string]spv1alpha1.PodGroupPhase{}, significant: map[string]string{},
		wroteAt: map[string]time.Time{}, abandoned: map[string]string{},
	}
}

// forget drops what the reporter keeps of a group: the engine forgot it, or its object
// is gone (a new object of that name gets its status written anew).
func (r *reporter) forget(key string) {
	delete(r.written, key)
	delete(r.conditions, key)
	delete(r.recorded, key)
	delete(r.phases, key)
	delete(r.significant, key)
	delete(r.wroteAt, key)
	delete(r.abandoned, key)
}

// groupWrite is one group's pending status write: what to send, and what the loop
// remembers it sent.
type groupWrite struct {
	key, fingerprint, record, significant string
	send                                  func(context.Context) error
}

// writeStatuses queues, for every group whose status changed, its conditions (in its
// API's form) and its lifecycle record (the muster.dev/lifecycle annotation `muster
// explain` reads) for the group object, or the record for the lowest-named member pod of
// a group that has no object. It looks at the groups the pass changed, or at every
// group when all is set. The writes are prepared here, in the loop, and sent by the
// status writer; a write that fails is prepared again on the next pass.
func (r *reporter) write(changed []string, swept []string) {
	r.giveUp(r.writer.takeRefused())
	failed := r.writer.takeFailed()
	for _, key := range failed {
		delete(r.significant, key)
		delete(r.written, key)
		delete(r.recorded, key)
		delete(r.phases, key)
	}
	keys := make(map[string]bool, len(changed)+len(failed))
	for _, key := range changed {
		keys[key] = true
	}
	for _, key := range failed {
		keys[key] = true
	}
	order := sortedKeys(keys)
	for _, key := range swept {
		if !keys[key] {
			order = append(order, key)
		}
	}
	for _, key := range order {
		w, ok := r.prepareWrite(key)
		if !ok {
			continue
		}
		r.writer.queue(w)
		r.written[w.key], r.recorded[w.key] = w.fingerprint, w.record
		r.significant[w.key], r.wroteAt[w.key] = w.significant, r.clock.Now()
	}
}

// ReasonStatusNotWritten is the reason of the Event on a group whose status write the
// API server refused for good.
const ReasonStatusNotWritten = "StatusNotWritten"

// giveUp records the status writes the API server refused for a reason retrying does
// not mend: each is not tried again until its group's state changes (see
// significance), with a StatusNotWritten Event and a count in
// muster_status_not_written_total. Before, muster retried such a write on every pass,
// about 31 times a minute, for ever.
func (r *reporter) giveUp(refused []refusal) {
	for _, f := range refused {
		r.abandoned[f.key] = f.significant
		r.metrics.StatusNotWritten.WithLabelValues(string(f.reason)).Inc()
		r.mirror.groupEvent(f.key, corev1.EventTypeWarning, ReasonStatusNotWritten,
			fmt.Sprintf("the API server refused the group's status (%s); muster writes it again when the group's state changes: %v", f.reason, f.err))
	}
}

// prepareWrite builds the write of one group's status, or reports that nothing changed.
func (r *reporter) prepareWrite(key string) (groupWrite, bool) {
	// Whether a write is due is decided on the brief status: most groups of a deep
	// queue are read once a second and found not due.
	brief, ok := r.eng.Brief(key)
	if !ok || !r.due(key, brief) {
		return groupWrite{}, false
	}
	sig := significance(brief)
	if refusedSig, refused := r.abandoned[key]; refused {
		if refusedSig == sig {
			return groupWrite{}, false // refused for good; tried again once the state moves
		}
		delete(r.abandoned, key)
	}
	st, _ := r.eng.Group(key)
	record, err := engine.EncodeRecord(st)
	if err != nil {
		r.log.Error(err, "encoding a lifecycle record", "group", key)
		return groupWrite{}, false
	}
	w := groupWrite{key: key, record: record, significant: sig}
	if r.mirror.object(key) == nil {
		// The record goes on a member pod; pods created again after an eviction (the
		// group kept its state for them) get it again.
		holder := r.recordHolder(key, w.record)
		if holder == nil {
			return w, false
		}
		w.fingerprint = string(holder.UID)
		if r.recorded[key] == w.record && r.written[key] == w.fingerprint {
			return w, false
		}
		w.send = r.podRecordWrite(holder, w.record)
		return w, true
	}
	conds := r.conditionsOf(key, st)
	fp, _ := json.Marshal(struct {
		C []metav1.Condition
		P spv1alpha1.PodGroupPhase
	}{conds, podGroupPhase(st)})
	w.fingerprint = string(fp)
	statusChanged := r.written[key] != w.fingerprint
	if !statusChanged && r.recorded[key] == w.record {
		return w, false
	}
	w.send = r.objectWrite(key, st, conds, statusChanged, w.record)
	return w, true
}

// messageRefresh is how often, at most, a group whose state is unchanged gets its
// messages rewritten. A waiting group's diagnosis counts nodes and members, and changes
// on almost every pass; writing it each time would double the API calls of a busy
// scheduler.
const messageRefresh = 10 * time.Second

// messageRefreshRate bounds the groups whose messages alone are rewritten, per second
// over all groups: past messageRefreshRate × messageRefresh groups, each is rewritten
// less often than messageRefresh (refreshEvery). In the deep-queue bench (10,500
// groups), rewriting each waiting group's status and lifecycle record every 10 s took a
// fifth of a core: about 20 of the loop's 45 s of CPU in 100 s of profile, its
// lifecycle record's and its conditions' JSON most of it.
const messageRefreshRate = 100

// refreshEvery is how long the messages of a group whose state is unchanged wait to be
// rewritten, with n groups tracked: messageRefresh, or n ÷ messageRefreshRate seconds
// when that is longer. A change of state is written at once, whatever n.
func refreshEvery(n int) time.Duration {
	return max(messageRefresh, time.Duration(n)*time.Second/messageRefreshRate)
}

// due reports whether a group's status should be written now: its state changed (phase,
// reasons, attempts, the kind of wait), or only its messages did and the last write is
// older than refreshEvery. The loop passes at least every reconcilePeriod, so a
// held-back message is written at most that late.
func (r *reporter) due(key string, st engine.Brief) bool {
	return r.significant[key] != significance(st) ||
		!r.wroteAt[key].Add(refreshEvery(len(r.wroteAt))).After(r.clock.Now())
}

// significance renders what of a group's status must reach its object at once.
func significance(st engine.Brief) string {
	return fmt.Sprintf("%s|%s|%s|%t|%d|%d|%s", st.Phase, st.Reason, st.WaitingKind, st.Invalid != "",
		st.Attempt, st.Failures, st.WakeAt.Format(time.RFC3339Nano))
}

// conditionsOf returns a group's conditions, naming in Admitted what the owner declares
// while the group gathers (a replica outside the group is the classic cause), or, when
// no controller owns its members, that nothing will create the missing ones. Only
// Admitted says why the group is not admitted yet; the other conditions keep their own
// meaning.
func (r *reporter) conditionsOf(key string, st engine.Status) []metav1.Condition {
	conds := Conditions(st)
	if st.Phase != lifecycle.Gathering {
		return conds
	}
	if owner := r.owners.objectOf(key); owner != nil {
		conds[0].Message = source.Gathering(st.Spec, st.Observed.Members, owner)
		if missing := st.Observed.TaskMissing; missing != "" {
			conds[0].Message += "; " + missing
		}
	} else if note := source.Unowned(st.Spec, st.Observed.Members, r.mirror.memberList(key)); note != "" {
		conds[0].Message += "; " + note
	}
	return conds
}

// objectWrite prepares the patches of a group object: its annotations (the lifecycle
// record, and what the group's API writes there: the conditions of scheduler-plugins
// PodGroups, whose API has no field for them) and, when the status changed, its status
// as the API's source.GroupAPI.StatusOut places it, keeping the transition times of
// conditions whose status did not change.
func (r *reporter) objectWrite(key string, st engine.Status, conds []metav1.Condition, statusChanged bool, record string) func(context.Context) error {
	ref := refOfKey(key)
	api := source.APIOf(ref.Source)
	annotations := map[string]any{musterv1alpha1.LifecycleAnnotation: record}
	var status map[string]any
	var subresources []string
	if statusChanged {
		prev := r.previousConditions(key)
		now := metav1.NewTime(r.clock.Now())
		for _, c := range conds {
			c.LastTransitionTime = now
			meta.SetStatusCondition(&prev, c)
		}
		r.conditions[key] = prev
		out := api.StatusOut(prev, st.Phase, string(r.phases[key]))
		if out.Phase != "" {
			r.phases[key] = spv1alpha1.PodGroupPhase(out.Phase)
		}
		for k, v := range out.Annotations {
			annotations[k] = v
		}
		if status = out.Status; out.Subresource {
			subresources = []string{"status"}
		}
	}
	metadata := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	return func(ctx context.Context) error {
		if status != nil && len(subresources) == 0 {
			metadata["status"] = status
			return r.patch(ctx, api, ref.Namespace, ref.Name, metadata)
		}
		if err := r.patch(ctx, api, ref.Namespace, ref.Name, metadata); err != nil {
			return err
		}
		if status == nil {
			return nil
		}
		return r.patch(ctx, api, ref.Namespace, ref.Name, map[string]any{"status": status}, subresources...)
	}
}

// previousConditions returns the conditions last written for a group.
func (r *reporter) previousConditions(key string) []metav1.Condition {
	return append([]metav1.Condition(nil), r.conditions[key]...)
}

// patch applies a JSON merge patch to a group object.
func (r *reporter) patch(ctx context.Context, api *source.GroupAPI, ns, name string, patch map[string]any, subresources ...string) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding a patch of %s %s/%s: %w", api.Resource.Resource, ns, name, err)
	}
	_, err = r.dyn.Resource(api.Resource).Namespace(ns).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{}, subresources...)
	if err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", api.Resource.GroupResource(), ns, name, err)
	}
	return nil
}

// recordHolder returns the member pod that is to carry a plain group's lifecycle
// record: its lowest-named with room for it in its annotations (see hasRoom), or nil
// when the group has no member left, or none with room.
func (r *reporter) recordHolder(key, record string) *corev1.Pod {
	for _, p := range r.mirror.byName(key) {
		if hasRoom(p, musterv1alpha1.LifecycleAnnotation, record) {
			return p
		}
	}
	return nil
}

// podRecordWrite prepares the write of a plain group's lifecycle record on holder.
func (r *reporter) podRecordWrite(holder *corev1.Pod, record string) func(context.Context) error {
	ns, name := holder.Namespace, holder.Name
	return func(ctx context.Context) error {
		patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{musterv1alpha1.LifecycleAnnotation: record}}}
		data, err := json.Marshal(patch)
		if err != nil {
			return fmt.Errorf("encoding a patch: %w", err)
		}
		_, err = r.kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("patching pod %s/%s: %w", ns, name, err)
		}
		return nil
	}
}
