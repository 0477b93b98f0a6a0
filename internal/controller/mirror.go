package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

// mirror keeps the engine's view of the cluster's pods and group objects: it reads the
// objects the informers saw change from the cache, tells the engine of each pod and
// node, and translates each group whose object or members changed into its spec. It
// owns the pods, the group objects and the membership of each group; the other owners
// read them through its methods. It runs on the loop's goroutine.
type mirror struct {
	*kit
	eng    *engine.Engine
	owners *owners
	queues *queueBook
	hooks  podHooks
	notes  *podNotes

	// pods holds every pod the engine knows, by key.
	pods map[string]*corev1.Pod
	// members holds each group's pods by key: muster's members, and pods of other
	// schedulers that name the group (for the schedulerName diagnosis).
	members map[string]map[string]*corev1.Pod
	// memberOf holds the key of the group each pod in pods is scheduled in.
	memberOf map[string]string
	// declared indexes pod keys by the group they name, and declaredBy is its
	// inverse: a basic native PodGroup's pods are scheduled as groups of their own.
	declared   map[string]map[string]bool
	declaredBy map[string]string
	// failed holds the keys of muster's pods seen Failed, for the evictor to decide on.
	failed map[string]bool
	// objects holds the group objects by group key.
	objects map[string]client.Object
	// specDirty holds the groups whose spec must be translated again.
	specDirty map[string]bool
}

// podHooks are what the mirror tells the other owners of pods as it sees them.
type podHooks struct {
	// leaving reports whether a pod is one of a Job muster suspended, on its way out.
	leaving func(uid types.UID) bool
	// gone is told of every pod that is gone or was replaced by one of the same name.
	gone func(uid types.UID)
	// seen is told of every pod key applied: current is the pod, or nil when it is gone.
	seen func(ctx context.Context, key string, current *corev1.Pod)
	// objectGone is told of a group whose object is gone: a new object of the same
	// name gets its status written anew.
	objectGone func(key string)
}

func newMirror(k *kit, eng *engine.Engine, o *owners, q *queueBook) *mirror {
	return &mirror{
		kit: k, eng: eng, owners: o, queues: q,
		notes: newPodNotes(k),
		pods:  map[string]*corev1.Pod{}, members: map[string]map[string]*corev1.Pod{},
		memberOf: map[string]string{}, declared: map[string]map[string]bool{}, declaredBy: map[string]string{},
		failed: map[string]bool{}, objects: map[string]client.Object{},
		specDirty: map[string]bool{},
	}
}

// apply reads every changed object from the cache and tells the engine.
func (m *mirror) apply(ctx context.Context, c *changes) {
	for key := range c.specs {
		m.specDirty[key] = true
	}
	if c.empty() {
		return
	}
	for name := range c.nodes {
		n := &corev1.Node{}
		if err := m.cache.Get(ctx, types.NamespacedName{Name: name}, n); err == nil {
			m.eng.SetNode(n)
		} else if apierrors.IsNotFound(err) {
			m.eng.RemoveNode(name)
		}
	}
	for ref := range c.objects {
		m.applyFilterObject(ctx, ref)
	}
	m.queues.apply(ctx, c.queues, c.namespaces)
	m.retranslate(c.namespaces, len(c.queues) > 0)
	for ref := range c.groups {
		m.applyGroupObject(ctx, ref)
	}
	for key := range c.pods {
		m.applyPod(ctx, key)
	}
}

// applyFilterObject reads one namespace or volume object from the cache for the engine's
// filters, or tells the engine it is gone.
func (m *mirror) applyFilterObject(ctx context.Context, ref objectRef) {
	for _, kind := range slices.Concat(filterObjects, draObjects, taintRules) {
		if fmt.Sprintf("%T", kind) != ref.kind {
			continue
		}
		obj := kind.DeepCopyObject().(client.Object)
		err := m.cache.Get(ctx, types.NamespacedName{Namespace: ref.namespace, Name: ref.name}, obj)
		switch {
		case err == nil:
			m.eng.SetObject(obj)
		case apierrors.IsNotFound(err):
			obj.SetNamespace(ref.namespace)
			obj.SetName(ref.name)
			m.eng.RemoveObject(obj)
		default:
			m.log.Error(err, "reading an object placement's filters use from the cache", "kind", ref.kind,
				"namespace", ref.namespace, "name", ref.name)
		}
	}
}

// takeDirty returns the groups whose spec must be translated again (with those whose
// pods' grace for GroupNotFound ended), sorted, and forgets them.
func (m *mirror) takeDirty() []string {
	for _, key := range m.notes.takeDue(m.clock.Now()) {
		m.specDirty[key] = true
	}
	out := sortedKeys(m.specDirty)
	clear(m.specDirty)
	return out
}

// applyGroupObject records a group object, or cancels its group when it is gone.
func (m *mirror) applyGroupObject(ctx context.Context, ref source.Ref) {
	key := ref.Key()
	obj := source.APIOf(ref.Source).New()
	_, wasBasic := m.basicObject(ref)
	err := m.cache.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj)
	switch {
	case err == nil:
		m.objects[key] = obj
		m.specDirty[key] = true
	case apierrors.IsNotFound(err):
		if _, ok := m.objects[key]; ok {
			delete(m.objects, key)
			m.hooks.objectGone(key)
			m.eng.RemoveGroup(key)
		}
	default:
		m.log.Error(err, "reading a group object from the cache", "group", key)
		return
	}
	m.reapplyDeclared(ctx, key, wasBasic)
}

// applyPod records a pod, or removes it when it is gone.
func (m *mirror) applyPod(ctx context.Context, key string) {
	p := &corev1.Pod{}
	err := m.cache.Get(ctx, splitKey(key), p)
	if err != nil && !apierrors.IsNotFound(err) {
		m.log.Error(err, "reading a pod from the cache", "pod", key)
		return
	}
	old := m.pods[key]
	if old != nil && (err != nil || old.UID != p.UID || m.memberOf[key] != m.memberKey(p)) {
		m.forgetPod(key)
		if err != nil || old.UID != p.UID {
			m.hooks.gone(old.UID)
		}
	}
	if err != nil {
		m.hooks.seen(ctx, key, nil)
		return
	}
	if m.hooks.leaving(p.UID) {
		// A pod of a Job muster suspended, on its way out: it counts against its node
		// and is no member of any group (see suspend.go).
		m.pods[key], m.memberOf[key] = p, ""
		m.eng.SetPod(p, "")
		return
	}
	m.hooks.seen(ctx, key, p)
	ref := m.groupRefOf(p)
	gk := ref.Key()
	m.pods[key], m.memberOf[key] = p, gk
	m.declare(key, source.GroupOf(p).Key())
	if m.isOurs(p) {
		m.notes.sayAmbiguous(p)
		m.eng.SetPod(p, gk)
		if p.Status.Phase == corev1.PodFailed {
			m.owners.memberFailed(gk, p)
			if p.DeletionTimestamp == nil {
				m.failed[key] = true
			}
		}
	} else {
		m.eng.SetPod(p, "")
		if ref.Source == engine.Single {
			return
		}
	}
	if m.members[gk] == nil {
		m.members[gk] = map[string]*corev1.Pod{}
	}
	m.members[gk][key] = p
	m.specDirty[gk] = true
}

// memberKey returns the key of the group p is a member of, or "" for a pod of a Job
// muster suspended, on its way out (see suspend.go).
func (m *mirror) memberKey(p *corev1.Pod) string {
	if m.hooks.leaving(p.UID) {
		return ""
	}
	return m.groupKeyOf(p)
}

// forgetPod removes a pod that is gone, was replaced by one of the same name, or moved
// to another group.
func (m *mirror) forgetPod(key string) {
	gk := m.memberOf[key]
	delete(m.pods, key)
	delete(m.memberOf, key)
	delete(m.failed, key)
	m.notes.forget(key)
	m.declare(key, "")
	m.eng.RemovePod(key)
	if mem := m.members[gk]; mem != nil {
		delete(mem, key)
		if len(mem) == 0 {
			delete(m.members, gk)
		}
		m.specDirty[gk] = true
	}
}

// pod returns the pod of key as last applied, or nil.
func (m *mirror) pod(key string) *corev1.Pod { return m.pods[key] }

// object returns a group's object, or nil for a group without one (or not seen).
func (m *mirror) object(key string) client.Object { return m.objects[key] }

// known reports whether the mirror holds anything of group key: its object or a member.
func (m *mirror) known(key string) bool { return m.objects[key] != nil || len(m.members[key]) > 0 }

// memberList returns a group's pods sorted by key.
func (m *mirror) memberList(key string) []*corev1.Pod {
	mem := m.members[key]
	out := make([]*corev1.Pod, 0, len(mem))
	for _, k := range sortedKeys(mem) {
		out = append(out, mem[k])
	}
	return out
}

// byName returns a group's member pods sorted by name.
func (m *mirror) byName(key string) []*corev1.Pod {
	pods := m.memberList(key)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// isOurs reports whether pod is muster's to schedule.
func (m *mirror) isOurs(p *corev1.Pod) bool { return m.cfg.Schedules(p.Spec.SchedulerName) }

// ours returns the pods that are muster's.
func (m *mirror) ours(pods []*corev1.Pod) []*corev1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return !m.isOurs(p) })
}

// takeFailed returns the keys of muster's pods seen Failed since the last call, sorted.
func (m *mirror) takeFailed() []string {
	out := sortedKeys(m.failed)
	clear(m.failed)
	return out
}

// retranslate marks for translation every group in the changed namespaces, or in
// every namespace when all is set (a Queue's selector changed).
func (m *mirror) retranslate(namespaces map[string]bool, all bool) {
	if !all && len(namespaces) == 0 {
		return
	}
	for key := range m.members {
		if all || namespaces[refOfKey(key).Namespace] {
			m.specDirty[key] = true
		}
	}
	for key := range m.objects {
		if all || namespaces[refOfKey(key).Namespace] {
			m.specDirty[key] = true
		}
	}
}

// groupEvent records an Event on a group's object, or on its member pods when it
// has none (Labels and Single groups).
func (m *mirror) groupEvent(gk, typ, reason, message string) {
	if obj := m.objects[gk]; obj != nil {
		m.event(obj, typ, reason, message)
		return
	}
	for _, p := range m.ours(m.memberList(gk)) {
		m.event(p, typ, reason, message)
	}
}

// forget drops what the mirror keeps of a group the engine forgot.
func (m *mirror) forget(key string) {
	delete(m.objects, key)
	delete(m.members, key)
	delete(m.specDirty, key)
}
