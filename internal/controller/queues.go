package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
)

// queueBook keeps the engine's Queues: it applies the Queue objects, with the namespaces
// each selector admits, and writes each Queue's status from the engine's groups. It runs
// on the loop's goroutine.
type queueBook struct {
	*kit
	eng *engine.Engine
	// served is whether the cluster serves muster's Queue API.
	served bool
	// namespaces holds the namespaces each Queue's selector admits, as last applied,
	// and errors why a Queue's selector admits none when it does not parse.
	namespaces map[string]map[string]bool
	errors     map[string]error
	// handed holds the last status handed to the writer per Queue, to write only
	// changes.
	handed map[string]string
	// status writes the Queues' status subresource, off the loop.
	status *queueStatusWriter
}

func newQueueBook(k *kit, eng *engine.Engine, statusClient client.SubResourceWriter) *queueBook {
	return &queueBook{kit: k, eng: eng, status: newQueueStatusWriter(k, statusClient),
		namespaces: map[string]map[string]bool{}, errors: map[string]error{}, handed: map[string]string{}}
}

// apply applies the changed Queues, and every Queue again when a namespace changed.
func (b *queueBook) apply(ctx context.Context, queues, namespaces map[string]bool) {
	if len(namespaces) > 0 {
		b.reapply(ctx, queues)
	}
	for name := range queues {
		b.applyQueue(ctx, name)
	}
}

// applyQueue sets a Queue, or removes it when it is gone.
func (b *queueBook) applyQueue(ctx context.Context, name string) {
	q := &musterv1alpha1.Queue{}
	err := b.cache.Get(ctx, client.ObjectKey{Name: name}, q)
	switch {
	case err == nil:
		eq := engineQueue(q)
		eq.Namespaces, b.errors[name] = b.namespacesOf(ctx, q)
		b.namespaces[name] = eq.Namespaces
		b.eng.SetQueue(eq)
	case apierrors.IsNotFound(err):
		delete(b.namespaces, name)
		delete(b.errors, name)
		delete(b.handed, name)
		b.eng.RemoveQueue(name)
		if name == b.cfg.DefaultQueue {
			b.ensureDefault()
		}
	default:
		b.log.Error(err, "reading a Queue from the cache", "queue", name)
	}
}

// reapply applies again every Queue not in skip (which apply applies anyway): a
// namespace was added, removed or relabelled, so the namespaces their selectors admit
// may have changed.
func (b *queueBook) reapply(ctx context.Context, skip map[string]bool) {
	var queues musterv1alpha1.QueueList
	if err := b.cache.List(ctx, &queues); err != nil {
		b.log.Error(err, "listing Queues to match the namespaces again")
		return
	}
	for i := range queues.Items {
		if name := queues.Items[i].Name; !skip[name] {
			b.applyQueue(ctx, name)
		}
	}
}

// ensureDefault makes the default queue unlimited when no Queue object names it.
func (b *queueBook) ensureDefault() {
	if b.served {
		q := &musterv1alpha1.Queue{}
		if err := b.cache.Get(context.Background(), client.ObjectKey{Name: b.cfg.DefaultQueue}, q); err == nil {
			return
		}
	}
	b.log.Info("no Queue object names the default queue; it is unlimited", "queue", b.cfg.DefaultQueue)
	b.eng.SetQueue(engine.Queue{Queue: queue.Queue{Name: b.cfg.DefaultQueue}})
}

// engineQueue translates a Queue object.
func engineQueue(q *musterv1alpha1.Queue) engine.Queue {
	out := engine.Queue{Queue: queue.Queue{Name: q.Name, Priority: q.Spec.Priority, Weight: q.Spec.Weight, Cohort: q.Spec.Cohort}}
	if len(q.Spec.Quota) > 0 {
		out.Quota = cluster.FromList(q.Spec.Quota)
	}
	if len(q.Spec.BorrowingLimit) > 0 {
		out.BorrowingLimit = cluster.FromList(q.Spec.BorrowingLimit)
	}
	if len(q.Spec.LendingLimit) > 0 {
		out.LendingLimit = cluster.FromList(q.Spec.LendingLimit)
	}
	if d := q.Spec.Defaults; d != nil {
		if d.StartTimeout != nil {
			out.Defaults.StartTimeout = &d.StartTimeout.Duration
		}
		if d.RecoveryTimeout != nil {
			out.Defaults.RecoveryTimeout = &d.RecoveryTimeout.Duration
		}
		if d.MaxRetries != nil {
			n := int(*d.MaxRetries)
			out.Defaults.MaxRetries = &n
		}
		if d.BackoffBase != nil {
			out.Defaults.BackoffBase = &d.BackoffBase.Duration
		}
		if d.BackoffMax != nil {
			out.Defaults.BackoffMax = &d.BackoffMax.Duration
		}
	}
	return out
}

// forNamespace returns the Queues a group of namespace ns may fall into when it
// names no queue: those, by name, whose spec.namespaceSelector selects the namespace,
// leaving out the configured default queue, which takes only the groups no other queue
// selects. None means the default queue; more than one is ambiguous (QueueAmbiguous).
func (b *queueBook) forNamespace(ctx context.Context, ns string) []string {
	if !b.served {
		return nil
	}
	var queues musterv1alpha1.QueueList
	if err := b.cache.List(ctx, &queues); err != nil {
		b.log.Error(err, "listing Queues to match a namespace", "namespace", ns)
		return nil
	}
	var out []string
	for i := range queues.Items {
		q := &queues.Items[i]
		if q.Name != b.cfg.DefaultQueue && b.namespaces[q.Name][ns] {
			out = append(out, q.Name)
		}
	}
	slices.Sort(out)
	return out
}

// namespacesOf evaluates a Queue's spec.namespaceSelector over the cached namespaces: the
// set of namespaces it admits. A Queue with no selector admits none, as Kueue's
// ClusterQueue; an empty selector admits every namespace. A selector that does not parse
// admits none, and the error says why (it becomes the Queue's Active condition).
func (b *queueBook) namespacesOf(ctx context.Context, q *musterv1alpha1.Queue) (map[string]bool, error) {
	out := map[string]bool{}
	if q.Spec.NamespaceSelector == nil {
		return out, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(q.Spec.NamespaceSelector)
	if err != nil {
		return out, fmt.Errorf("spec.namespaceSelector: %w", err)
	}
	var namespaces corev1.NamespaceList
	if err := b.cache.List(ctx, &namespaces); err != nil {
		return out, fmt.Errorf("listing namespaces: %w", err)
	}
	for i := range namespaces.Items {
		if sel.Matches(labels.Set(namespaces.Items[i].Labels)) {
			out[namespaces.Items[i].Name] = true
		}
	}
	return out, nil
}

// queueStatus is what muster reports of one Queue.
type queueStatus struct {
	Admitted, Pending int32
	Used              cluster.Resources
	// Borrowed is what Used holds beyond the queue's quota.
	Borrowed cluster.Resources
	// WeightedShare is queue.WeightedShare in thousandths.
	WeightedShare int64
	// Active is the queue's Active condition, without its transition time.
	Active metav1.Condition
}

// queueStatuses sums the engine's groups per queue: a group holding resources counts
// as admitted and adds what it holds to used; a Queued group counts as pending.
func (b *queueBook) statuses() map[string]*queueStatus {
	out := map[string]*queueStatus{}
	for _, key := range b.eng.Groups() {
		// The brief status and what the group holds, not its whole Status: with a deep
		// queue, building every group's Status here was a seventh of the loop.
		st, _ := b.eng.Brief(key)
		list, _ := b.eng.Held(key)
		qs := out[st.Queue]
		if qs == nil {
			qs = &queueStatus{Used: cluster.Resources{}}
			out[st.Queue] = qs
		}
		if st.Phase == lifecycle.Queued {
			qs.Pending++
		}
		if held := cluster.FromList(list); !held.IsZero() {
			qs.Admitted++
			qs.Used.Add(held)
		}
	}
	for name, share := range b.eng.QueueShares() {
		if qs := out[name]; qs != nil {
			qs.WeightedShare = int64(math.Round(share * 1000))
		}
	}
	return out
}

// writeStatuses has the writer write status.admittedGroups, status.pendingGroups,
// status.used and status.weightedShare of every Queue object whose numbers changed,
// through the status subresource.
func (b *queueBook) writeStatuses(ctx context.Context) {
	if !b.served {
		return
	}
	var queues musterv1alpha1.QueueList
	if err := b.cache.List(ctx, &queues); err != nil {
		b.log.Error(err, "listing Queues to write their status")
		return
	}
	sums := b.statuses()
	for i := range queues.Items {
		q := &queues.Items[i]
		qs := sums[q.Name]
		if qs == nil {
			qs = &queueStatus{}
		}
		if q.Spec.Cohort != "" {
			qs.Borrowed = queue.Borrowed(qs.Used, cluster.FromList(q.Spec.Quota))
		}
		qs.Active = activeCondition(q, b.namespaces[q.Name], b.errors[q.Name])
		fp, _ := json.Marshal(qs)
		if b.handed[q.Name] == string(fp) {
			continue
		}
		patch, err := b.statusPatch(q, qs)
		if err != nil {
			b.log.Error(err, "writing a Queue's status", "queue", q.Name)
			continue
		}
		b.status.want(q.Name, patch)
		b.handed[q.Name] = string(fp)
	}
}

// statusPatch is the merge patch of a Queue's status subresource that writes qs. A
// resource of status.used or status.borrowed that is no longer held is removed.
func (b *queueBook) statusPatch(q *musterv1alpha1.Queue, qs *queueStatus) ([]byte, error) {
	conds := slices.Clone(q.Status.Conditions)
	active := qs.Active
	active.LastTransitionTime = metav1.NewTime(b.clock.Now())
	active.ObservedGeneration = q.Generation
	meta.SetStatusCondition(&conds, active)
	data, err := json.Marshal(map[string]any{"status": map[string]any{
		"admittedGroups": qs.Admitted, "pendingGroups": qs.Pending, "weightedShare": qs.WeightedShare,
		"used": resourcePatch(q.Status.Used, qs.Used), "borrowed": resourcePatch(q.Status.Borrowed, qs.Borrowed),
		"conditions": conds,
	}})
	if err != nil {
		return nil, fmt.Errorf("encoding the status of Queue %s: %w", q.Name, err)
	}
	return data, nil
}

// QueueConditionActive is the type of a Queue's condition that says whether groups can be
// admitted through it.
const QueueConditionActive = "Active"

// Reasons of a Queue's Active condition.
const (
	// ReasonQueueReady: the queue admits groups of the namespaces its selector selects.
	ReasonQueueReady = "Ready"
	// ReasonNoNamespaceSelector: spec.namespaceSelector is unset, so no namespace may use
	// the queue.
	ReasonNoNamespaceSelector = "NoNamespaceSelector"
	// ReasonInvalidNamespaceSelector: spec.namespaceSelector does not parse.
	ReasonInvalidNamespaceSelector = "InvalidNamespaceSelector"
)

// activeCondition says whether groups can be admitted through q, and why not: it admits
// the namespaces of admitted, unless its selector is missing or does not parse (selErr).
func activeCondition(q *musterv1alpha1.Queue, admitted map[string]bool, selErr error) metav1.Condition {
	c := metav1.Condition{Type: QueueConditionActive, Status: metav1.ConditionTrue, Reason: ReasonQueueReady}
	switch {
	case selErr != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonInvalidNamespaceSelector, selErr.Error()+"; the queue admits no namespace"
	case q.Spec.NamespaceSelector == nil:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNoNamespaceSelector
		c.Message = "spec.namespaceSelector is unset, so the queue admits no namespace; set it to {} to admit every namespace"
	default:
		c.Message = fmt.Sprintf("admits groups of %d namespace(s) selected by spec.namespaceSelector", len(admitted))
	}
	return c
}

// resourcePatch is the merge patch that turns the resource list was into now: each
// resource of now, and null for each resource of was that now lacks.
func resourcePatch(was corev1.ResourceList, now cluster.Resources) map[corev1.ResourceName]any {
	out := map[corev1.ResourceName]any{}
	for name := range was {
		out[name] = nil
	}
	for name, v := range now.List() {
		out[name] = v.String()
	}
	return out
}
