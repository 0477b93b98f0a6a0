package controller

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/source"
)

// apply reads every changed object from the cache and tells the engine.
func (s *scheduler) apply(ctx context.Context, c *changes) {
	if c.empty() && len(s.specDirty) == 0 {
		return
	}
	cache := s.mgr.GetCache()
	for name := range c.nodes {
		n := &corev1.Node{}
		if err := cache.Get(ctx, types.NamespacedName{Name: name}, n); err == nil {
			s.eng.SetNode(n)
		} else if apierrors.IsNotFound(err) {
			s.eng.RemoveNode(name)
		}
	}
	if len(c.namespaces) > 0 {
		s.reapplyQueues(ctx, c.queues)
	}
	for name := range c.queues {
		s.applyQueue(ctx, name)
	}
	s.retranslateNamespaces(c.namespaces, len(c.queues) > 0)
	for ref := range c.groups {
		s.applyGroupObject(ctx, ref)
	}
	for key := range c.pods {
		s.applyPod(ctx, key)
	}
	for _, key := range sortedKeys(s.specDirty) {
		s.translate(key)
	}
	clear(s.specDirty)
}

// applyGroupObject records a group object, or cancels its group when it is gone.
func (s *scheduler) applyGroupObject(ctx context.Context, ref source.Ref) {
	key := ref.Key()
	obj := apiOf(ref.Source).newObject()
	_, wasBasic := s.basicObject(ref)
	err := s.mgr.GetCache().Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj)
	switch {
	case err == nil:
		s.objects[key] = obj
		s.specDirty[key] = true
	case apierrors.IsNotFound(err):
		if _, ok := s.objects[key]; ok {
			delete(s.objects, key)
			delete(s.written, key)
			delete(s.conditions, key)
			s.eng.RemoveGroup(key)
		}
	default:
		s.log.Error(err, "reading a group object from the cache", "group", key)
		return
	}
	s.reapplyDeclared(ctx, key, wasBasic)
}

// applyPod records a pod, or removes it when it is gone (recreating it if muster
// evicted it and it has no controller).
func (s *scheduler) applyPod(ctx context.Context, key string) {
	p := &corev1.Pod{}
	err := s.mgr.GetCache().Get(ctx, splitKey(key), p)
	if err != nil && !apierrors.IsNotFound(err) {
		s.log.Error(err, "reading a pod from the cache", "pod", key)
		return
	}
	old := s.pods[key]
	if old != nil && (err != nil || old.UID != p.UID || s.memberOf[key] != s.memberKey(p)) {
		s.forgetPod(key, old)
		if err != nil || old.UID != p.UID {
			s.gone(old.UID)
		}
	}
	if err != nil {
		s.recreateIfRecorded(ctx, key, nil)
		return
	}
	if s.leaving[p.UID] != nil {
		// A pod of a Job muster suspended, on its way out: it counts against its node
		// and is no member of any group (see suspend.go).
		s.pods[key], s.memberOf[key] = p, ""
		s.eng.SetPod(p, "")
		return
	}
	if r := s.recreate[key]; r != nil && r.uid != p.UID {
		s.recreateIfRecorded(ctx, key, p)
	}
	ref := s.groupRefOf(p)
	gk := ref.Key()
	s.pods[key], s.memberOf[key] = p, gk
	s.declare(key, source.GroupOf(p).Key())
	if s.podIsOurs(p) {
		s.sayAmbiguous(ctx, p)
		s.eng.SetPod(p, gk)
		s.noteFailed(key, p)
		s.watchOwner(gk, p)
	} else {
		s.eng.SetPod(p, "")
		if ref.Source == engine.Single {
			return
		}
	}
	if s.members[gk] == nil {
		s.members[gk] = map[string]*corev1.Pod{}
	}
	s.members[gk][key] = p
	s.specDirty[gk] = true
}

// memberKey returns the key of the group p is a member of, or "" for a pod of a Job
// muster suspended, on its way out (see suspend.go).
func (s *scheduler) memberKey(p *corev1.Pod) string {
	if s.leaving[p.UID] != nil {
		return ""
	}
	return s.groupKeyOf(p)
}

// forgetPod removes a pod that is gone, was replaced by one of the same name, or moved
// to another group.
func (s *scheduler) forgetPod(key string, old *corev1.Pod) {
	gk := s.memberOf[key]
	delete(s.pods, key)
	delete(s.memberOf, key)
	delete(s.failed, key)
	delete(s.said, key)
	s.declare(key, "")
	s.eng.RemovePod(key)
	if m := s.members[gk]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(s.members, gk)
		}
		s.specDirty[gk] = true
	}
}

// translate computes a group's spec from its object and members and sets it.
func (s *scheduler) translate(key string) {
	ref := refOfKey(key)
	pods := s.memberList(key)
	var spec engine.GroupSpec
	switch obj := s.objects[key].(type) {
	case *spv1alpha1.PodGroup:
		spec = source.FromCoscheduling(obj, s.ours(pods), s.priority)
	case *volcanov1beta1.PodGroup:
		spec = source.FromVolcano(obj, s.priority)
	case *schedulingv1beta1.PodGroup:
		if source.IsBasic(obj) {
			return // no gang: its pods are groups of their own (see basic.go)
		}
		spec = source.FromNative(obj, s.priority)
	default:
		ours := s.ours(pods)
		switch {
		case len(ours) == 0:
			return // an object group not seen yet, or a plain group with no pod left
		case ref.Source == engine.Labels:
			spec = source.FromLabels(ref, ours, s.priority)
		case ref.Source == engine.Single:
			spec = s.singleSpec(ours[0])
		default:
			// Members name a group object not seen yet: they wait for it, and are told.
			s.sayMissing(context.Background(), ref, ours)
			return
		}
	}
	owner := s.ownerOf(context.Background(), pods, s.objects[key])
	source.CheckMembers(&spec, pods, owner, s.cfg.SchedulerName)
	if owner != nil {
		s.ownerObjects[key] = owner
	} else {
		delete(s.ownerObjects, key)
	}
	spec.OwnerFailed = source.OwnerFailure(owner)
	spec.Stopped = stopped(s.objects[key], pods)
	if spec.Queue == "" {
		switch candidates := s.queuesForNamespace(context.Background(), ref.Namespace); len(candidates) {
		case 0:
		case 1:
			spec.Queue = candidates[0]
		default:
			spec.QueueCandidates = candidates
		}
	}
	if !s.eng.Started(key) {
		spec.Past = s.pastOf(key)
	}
	s.eng.SetGroup(spec)
}

// stopped reports whether a user stopped the group: its object, or for a group without
// one any of its pods, carries muster.dev/stopped: "true".
func stopped(obj client.Object, pods []*corev1.Pod) bool {
	if obj != nil {
		return obj.GetAnnotations()[musterv1alpha1.StoppedAnnotation] == "true"
	}
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.Annotations[musterv1alpha1.StoppedAnnotation] == "true" })
}

// pastOf reads the lifecycle record an earlier muster wrote for a group (on its object,
// or on its lowest-named member pod for a group without one), so that a restarted muster,
// or a new leader, resumes the group's retries rather than starting them over. A record
// that does not decode is logged and ignored.
func (s *scheduler) pastOf(key string) *lifecycle.Past {
	var annotations map[string]string
	holder := ""
	if obj := s.objects[key]; obj != nil {
		annotations, holder = obj.GetAnnotations(), key
	} else if p := s.recordCarrier(key); p != nil {
		annotations, holder = p.Annotations, podKey(p)
	}
	if owner := s.ownerObjects[key]; annotations[musterv1alpha1.LifecycleAnnotation] == "" && owner != nil &&
		owner.GetAPIVersion() == "batch/v1" && owner.GetKind() == "Job" {
		// The pods of a Job muster suspended came back without the record: the Job
		// carries it (see suspend.go).
		annotations, holder = owner.GetAnnotations(), "Job "+owner.GetNamespace()+"/"+owner.GetName()
	}
	rec, ok, err := musterv1alpha1.RecordIn(annotations)
	if err != nil {
		s.log.Error(err, "ignoring a lifecycle record that does not decode", "group", key, "on", holder)
	}
	if !ok {
		return nil
	}
	past := engine.PastOf(rec)
	return &past
}

// memberList returns a group's pods sorted by key.
func (s *scheduler) memberList(key string) []*corev1.Pod {
	m := s.members[key]
	out := make([]*corev1.Pod, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// ours returns the pods that are muster's.
func (s *scheduler) ours(pods []*corev1.Pod) []*corev1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return !s.podIsOurs(p) })
}

// priority resolves a PriorityClass from the cache.
func (s *scheduler) priority(name string) (source.PriorityClass, bool) {
	pc := &schedulingv1.PriorityClass{}
	if err := s.mgr.GetCache().Get(context.Background(), types.NamespacedName{Name: name}, pc); err != nil {
		return source.PriorityClass{}, false
	}
	out := source.PriorityClass{Value: pc.Value}
	if pc.PreemptionPolicy != nil {
		out.PreemptionPolicy = *pc.PreemptionPolicy
	}
	return out, true
}

// applyQueue sets a Queue, or removes it when it is gone.
func (s *scheduler) applyQueue(ctx context.Context, name string) {
	q := &musterv1alpha1.Queue{}
	err := s.mgr.GetCache().Get(ctx, client.ObjectKey{Name: name}, q)
	switch {
	case err == nil:
		eq := engineQueue(q)
		eq.Namespaces, s.queueErrors[name] = s.namespacesOf(ctx, q)
		s.queueNamespaces[name] = eq.Namespaces
		s.eng.SetQueue(eq)
	case apierrors.IsNotFound(err):
		delete(s.queueNamespaces, name)
		delete(s.queueErrors, name)
		s.eng.RemoveQueue(name)
		if name == s.cfg.DefaultQueue {
			s.ensureDefaultQueue()
		}
	default:
		s.log.Error(err, "reading a Queue from the cache", "queue", name)
	}
}

// reapplyQueues applies again every Queue not in skip (which apply applies anyway): a
// namespace was added, removed or relabelled, so the namespaces their selectors admit
// may have changed.
func (s *scheduler) reapplyQueues(ctx context.Context, skip map[string]bool) {
	var queues musterv1alpha1.QueueList
	if err := s.mgr.GetCache().List(ctx, &queues); err != nil {
		s.log.Error(err, "listing Queues to match the namespaces again")
		return
	}
	for i := range queues.Items {
		if name := queues.Items[i].Name; !skip[name] {
			s.applyQueue(ctx, name)
		}
	}
}

// ensureDefaultQueue makes the default queue unlimited when no Queue object names it.
func (s *scheduler) ensureDefaultQueue() {
	if s.queuesServed {
		q := &musterv1alpha1.Queue{}
		if err := s.mgr.GetCache().Get(context.Background(), client.ObjectKey{Name: s.cfg.DefaultQueue}, q); err == nil {
			return
		}
	}
	s.log.Info("no Queue object names the default queue; it is unlimited", "queue", s.cfg.DefaultQueue)
	s.eng.SetQueue(engine.Queue{Queue: queue.Queue{Name: s.cfg.DefaultQueue}})
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

// sortedKeys returns a map's keys, sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
