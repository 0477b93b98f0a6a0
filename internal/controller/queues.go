package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
)

// queuesForNamespace returns the Queues a group of namespace ns may fall into when it
// names no queue: those, by name, whose spec.namespaceSelector selects the namespace,
// leaving out the configured default queue, which takes only the groups no other queue
// selects. None means the default queue; more than one is ambiguous (QueueAmbiguous).
func (s *scheduler) queuesForNamespace(ctx context.Context, ns string) []string {
	if !s.queuesServed {
		return nil
	}
	var queues musterv1alpha1.QueueList
	if err := s.mgr.GetCache().List(ctx, &queues); err != nil {
		s.log.Error(err, "listing Queues to match a namespace", "namespace", ns)
		return nil
	}
	var out []string
	for i := range queues.Items {
		q := &queues.Items[i]
		if q.Name != s.cfg.DefaultQueue && s.admitted(q.Name)[ns] {
			out = append(out, q.Name)
		}
	}
	slices.Sort(out)
	return out
}

// admitted returns the namespaces Queue name admits, as last applied.
func (s *scheduler) admitted(name string) map[string]bool { return s.queueNamespaces[name] }

// namespacesOf evaluates a Queue's spec.namespaceSelector over the cached namespaces: the
// set of namespaces it admits. A Queue with no selector admits none, as Kueue's
// ClusterQueue; an empty selector admits every namespace. A selector that does not parse
// admits none, and the error says why (it becomes the Queue's Active condition).
func (s *scheduler) namespacesOf(ctx context.Context, q *musterv1alpha1.Queue) (map[string]bool, error) {
	out := map[string]bool{}
	if q.Spec.NamespaceSelector == nil {
		return out, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(q.Spec.NamespaceSelector)
	if err != nil {
		return out, fmt.Errorf("spec.namespaceSelector: %w", err)
	}
	var namespaces corev1.NamespaceList
	if err := s.mgr.GetCache().List(ctx, &namespaces); err != nil {
		return out, fmt.Errorf("listing namespaces: %w", err)
	}
	for i := range namespaces.Items {
		if sel.Matches(labels.Set(namespaces.Items[i].Labels)) {
			out[namespaces.Items[i].Name] = true
		}
	}
	return out, nil
}

// retranslateNamespaces marks for translation every group in the changed namespaces,
// or in every namespace when all is set (a Queue's selector changed).
func (s *scheduler) retranslateNamespaces(namespaces map[string]bool, all bool) {
	if !all && len(namespaces) == 0 {
		return
	}
	for key := range s.members {
		if all || namespaces[refOfKey(key).Namespace] {
			s.specDirty[key] = true
		}
	}
	for key := range s.objects {
		if all || namespaces[refOfKey(key).Namespace] {
			s.specDirty[key] = true
		}
	}
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
func (s *scheduler) queueStatuses() map[string]*queueStatus {
	out := map[string]*queueStatus{}
	for _, key := range s.eng.Groups() {
		st, _ := s.eng.Group(key)
		qs := out[st.Queue]
		if qs == nil {
			qs = &queueStatus{Used: cluster.Resources{}}
			out[st.Queue] = qs
		}
		if st.Phase == lifecycle.Queued {
			qs.Pending++
		}
		if held := cluster.FromList(st.Observed.Held); !held.IsZero() {
			qs.Admitted++
			qs.Used.Add(held)
		}
	}
	for name, share := range s.eng.QueueShares() {
		if qs := out[name]; qs != nil {
			qs.WeightedShare = int64(math.Round(share * 1000))
		}
	}
	return out
}

// writeQueueStatuses writes status.admittedGroups, status.pendingGroups, status.used
// and status.weightedShare of every Queue object whose numbers changed, through the status
// subresource.
func (s *scheduler) writeQueueStatuses(ctx context.Context) {
	if !s.queuesServed {
		return
	}
	var queues musterv1alpha1.QueueList
	if err := s.mgr.GetCache().List(ctx, &queues); err != nil {
		s.log.Error(err, "listing Queues to write their status")
		return
	}
	sums := s.queueStatuses()
	for i := range queues.Items {
		q := &queues.Items[i]
		qs := sums[q.Name]
		if qs == nil {
			qs = &queueStatus{}
		}
		if q.Spec.Cohort != "" {
			qs.Borrowed = queue.Borrowed(qs.Used, cluster.FromList(q.Spec.Quota))
		}
		qs.Active = activeCondition(q, s.queueNamespaces[q.Name], s.queueErrors[q.Name])
		fp, _ := json.Marshal(qs)
		if s.queueWritten[q.Name] == string(fp) {
			continue
		}
		if err := s.patchQueueStatus(ctx, q, qs); err != nil {
			s.log.Error(err, "writing a Queue's status", "queue", q.Name)
			continue
		}
		s.queueWritten[q.Name] = string(fp)
	}
}

// patchQueueStatus merge-patches a Queue's status subresource with qs. A resource of
// status.used or status.borrowed that is no longer held is removed.
func (s *scheduler) patchQueueStatus(ctx context.Context, q *musterv1alpha1.Queue, qs *queueStatus) error {
	conds := slices.Clone(q.Status.Conditions)
	active := qs.Active
	active.LastTransitionTime = metav1.NewTime(s.clock.Now())
	active.ObservedGeneration = q.Generation
	meta.SetStatusCondition(&conds, active)
	data, err := json.Marshal(map[string]any{"status": map[string]any{
		"admittedGroups": qs.Admitted, "pendingGroups": qs.Pending, "weightedShare": qs.WeightedShare,
		"used": resourcePatch(q.Status.Used, qs.Used), "borrowed": resourcePatch(q.Status.Borrowed, qs.Borrowed),
		"conditions": conds,
	}})
	if err != nil {
		return fmt.Errorf("encoding the status of Queue %s: %w", q.Name, err)
	}
	obj := &musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: q.Name}}
	if err := s.mgr.GetClient().Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patching the status of Queue %s: %w", q.Name, err)
	}
	return nil
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
