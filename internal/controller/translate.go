package controller

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/source"
)

// translator turns a group's object and members, as the mirror holds them, into the
// group's spec for the engine, with its owner, queue and past (the lifecycle record an
// earlier muster wrote). It runs on the loop's goroutine and keeps nothing of its own.
type translator struct {
	*kit
	eng    *engine.Engine
	mirror *mirror
	owners *owners
	queues *queueBook
}

// translate computes a group's spec from its object and members and sets it. A group
// not started yet whose owner is being read waits for it: the owner may carry the
// group's lifecycle record (a Job muster suspended), and the read marks it again.
func (t *translator) translate(key string) {
	ref := refOfKey(key)
	pods := t.mirror.memberList(key)
	spec, ok := t.specOf(key, ref, pods)
	if !ok {
		return
	}
	owner, pending := t.owners.ownerOf(key, pods, t.mirror.object(key))
	if pending && !t.eng.Started(key) {
		return
	}
	source.CheckMembers(&spec, pods, owner, t.cfg.SchedulerNames())
	spec.OwnerFailed = source.OwnerFailure(owner)
	spec.Stopped = stopped(t.mirror.object(key), pods)
	spec.ObjectOwner = podOwnerOf(t.mirror.object(key))
	if spec.Queue == "" {
		switch candidates := t.queues.forNamespace(context.Background(), ref.Namespace); len(candidates) {
		case 0:
		case 1:
			spec.Queue = candidates[0]
		default:
			spec.QueueCandidates = candidates
		}
	}
	if !t.eng.Started(key) {
		spec.Past = t.pastOf(key)
	}
	t.eng.SetGroup(spec)
}

// specOf translates a group's object, or its pods for a group without one; ok is false
// when there is nothing to translate yet.
func (t *translator) specOf(key string, ref source.Ref, pods []*corev1.Pod) (engine.GroupSpec, bool) {
	if api, obj := source.APIOf(ref.Source), t.mirror.object(key); api != nil && obj != nil {
		// A basic native PodGroup is no gang: its pods are groups of their own (basic.go).
		return api.Translate(obj, t.mirror.ours(pods), t.priority)
	}
	ours := t.mirror.ours(pods)
	switch {
	case len(ours) == 0:
		return engine.GroupSpec{}, false // an object group not seen yet, or a plain group with no pod left
	case ref.Source == engine.Labels:
		return source.FromLabels(ref, ours, t.priority), true
	case ref.Source == engine.Single:
		return t.singleSpec(ours[0]), true
	}
	// Members name a group object not seen yet: they wait for it, and are told.
	t.mirror.notes.sayMissing(key, ref, ours)
	return engine.GroupSpec{}, false
}

// podOwnerOf returns the UID of the pod that owns obj as its controller, if a pod does
// (a LeaderWorkerSet's Volcano PodGroup is owned by the group's leader). The engine
// compares it only with the UIDs of the group's own members (GroupSpec.ObjectOwner).
func podOwnerOf(obj client.Object) types.UID {
	if obj == nil {
		return ""
	}
	if ref := metav1.GetControllerOf(obj); ref != nil && ref.APIVersion == "v1" && ref.Kind == "Pod" {
		return ref.UID
	}
	return ""
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
// or on its member pods for a group without one), so that a restarted muster, or a new
// leader, resumes the group's retries rather than starting them over. The pods of a Job
// muster suspended come back without the record, which the Job carries (see
// suspend.go). Of the copies found, the latest is resumed (engine.Later): a pod's copy
// may lag the Job's, and a pod that is going away may still carry an old one. A record
// that does not decode is logged and ignored.
func (t *translator) pastOf(key string) *lifecycle.Past {
	var latest *musterv1alpha1.GroupLifecycle
	consider := func(annotations map[string]string, holder string) {
		rec, ok, err := musterv1alpha1.RecordIn(annotations)
		if err != nil {
			t.log.Error(err, "ignoring a lifecycle record that does not decode", "group", key, "on", holder)
		}
		if ok && err == nil && (latest == nil || engine.Later(rec, *latest)) {
			latest = &rec
		}
	}
	if obj := t.mirror.object(key); obj != nil {
		consider(obj.GetAnnotations(), key)
	} else {
		for _, p := range t.mirror.byName(key) {
			consider(p.Annotations, podKey(p))
		}
	}
	if owner := t.owners.objectOf(key); owner != nil && owner.GetAPIVersion() == "batch/v1" && owner.GetKind() == "Job" {
		consider(owner.GetAnnotations(), "Job "+owner.GetNamespace()+"/"+owner.GetName())
	}
	if latest == nil {
		return nil
	}
	past := engine.PastOf(*latest)
	return &past
}

// priority resolves a PriorityClass from the cache.
func (t *translator) priority(name string) (source.PriorityClass, bool) {
	pc := &schedulingv1.PriorityClass{}
	if err := t.cache.Get(context.Background(), types.NamespacedName{Name: name}, pc); err != nil {
		return source.PriorityClass{}, false
	}
	out := source.PriorityClass{Value: pc.Value}
	if pc.PreemptionPolicy != nil {
		out.PreemptionPolicy = *pc.PreemptionPolicy
	}
	return out, true
}

// singleSpec translates a Single group: the pod's own, or, for a member of a basic
// native PodGroup, the PodGroup's translated for a group of one.
func (t *translator) singleSpec(p *corev1.Pod) engine.GroupSpec {
	pg, basic := t.mirror.basicObject(source.GroupOf(p))
	if !basic {
		return source.FromSingle(p, t.priority)
	}
	spec := source.FromNative(pg, t.priority)
	ref := source.Ref{Source: engine.Single, Namespace: p.Namespace, Name: p.Name}
	spec.Key, spec.Source, spec.Name, spec.MinMember = ref.Key(), ref.Source, ref.Name, 1
	return spec
}
