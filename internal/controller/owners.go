package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/source"
)

// ownerTTL is how long an owner read from the API server is used before it is read
// again: the replicas a job declares rarely change, and a group is translated on every
// change of its pods.
const ownerTTL = 30 * time.Second

// ownerReaders is how many owner reads are in flight at once.
const ownerReaders = 2

// When a member with a controller owner fails, the owner decides what happens next: a
// batch Job with backoffLimit left creates a replacement, one past its backoffLimit fails
// for good and creates nothing more. muster learns the owner's verdict by reading it
// again every ownerRecheckEvery for ownerRecheckFor after the failure (the Job
// controller sets its Failed condition within seconds); a failed owner fails the group
// at once (GroupSpec.OwnerFailed) instead of leaving it to wait out its start or
// recovery timeout and retries for members that will not come. Reading rather than
// watching keeps muster to the get it has on owners, and costs nothing while no member
// fails.
const (
	ownerRecheckEvery = 2 * time.Second
	ownerRecheckFor   = time.Minute
)

// owners holds the workload controllers behind the groups (a Job, a PyTorchJob, a
// JobSet), read for diagnoses and for the lifecycle record a suspended Job carries. The
// reads never block the loop: the loop asks, readers GET the owner in the background,
// and the groups that asked are translated again when the owner is in.
type owners struct {
	*kit
	mapper meta.RESTMapper
	// again marks groups for translation and wakes the loop; readers call it.
	again func(groups []string)
	reads workqueue.TypedInterface[ownerRef]

	mu sync.Mutex
	// entries holds the owners read, by namespace and UID; epoch counts the changes
	// muster made to each, so that a read begun before one does not overwrite it.
	entries map[types.NamespacedName]ownerEntry
	epoch   map[types.NamespacedName]int
	// waiting holds, per owner being read, the groups to translate again.
	waiting map[types.NamespacedName]map[string]bool

	// Owned by the loop: each group's owner as of its last translation, and the groups
	// whose owner is read again after a member failed.
	byGroup  map[string]*unstructured.Unstructured
	rechecks map[string]*recheck
}

// ownerRef names an owner to read: a controller reference and the namespace it is in.
type ownerRef struct {
	Namespace, APIVersion, Kind, Name string
	UID                               types.UID
}

func (r ownerRef) key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: string(r.UID)}
}

// ownerEntry is an owner as read at a time; obj is nil when it could not be read.
type ownerEntry struct {
	obj *unstructured.Unstructured
	at  time.Time
}

// recheck is when to read a group's owner again, and until when.
type recheck struct {
	next, until time.Time
}

func newOwners(k *kit, mapper meta.RESTMapper, again func([]string)) *owners {
	return &owners{
		kit: k, mapper: mapper, again: again,
		reads:   workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[ownerRef]{Name: "owners"}),
		entries: map[types.NamespacedName]ownerEntry{}, epoch: map[types.NamespacedName]int{},
		waiting: map[types.NamespacedName]map[string]bool{},
		byGroup: map[string]*unstructured.Unstructured{}, rechecks: map[string]*recheck{},
	}
}

// run reads the owners asked for until ctx is done.
func (o *owners) run(ctx context.Context) { drain(ctx, ownerReaders, o.reads, o.readNext) }

// readNext reads the next owner asked for, stores it and marks the groups that wait for
// it; false once the queue is shut down.
func (o *owners) readNext(ctx context.Context) bool {
	r, quit := o.reads.Get()
	if quit {
		return false
	}
	defer o.reads.Done(r)
	key := r.key()
	o.mu.Lock()
	epoch := o.epoch[key]
	o.mu.Unlock()
	obj, err := o.read(ctx, r)
	if err != nil {
		o.log.V(1).Info("cannot read a group's owner; diagnoses will not name its replicas",
			"owner", r.Kind+" "+r.Namespace+"/"+r.Name, "error", err.Error())
	}
	o.mu.Lock()
	if o.epoch[key] == epoch {
		o.entries[key] = ownerEntry{obj: obj, at: o.clock.Now()}
	}
	groups := o.waiting[key]
	delete(o.waiting, key)
	o.prune()
	o.mu.Unlock()
	if len(groups) > 0 {
		o.again(sortedKeys(groups))
	}
	return true
}

// read GETs the owner r names, checking that it is the object the reference was made
// for.
func (o *owners) read(ctx context.Context, r ownerRef) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return nil, err
	}
	mapping, err := o.mapper.RESTMapping(gv.WithKind(r.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, err
	}
	obj, err := o.dyn.Resource(mapping.Resource).Namespace(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if obj.GetUID() != r.UID {
		return nil, fmt.Errorf("%s %s/%s: expected uid %s, found %s", r.Kind, r.Namespace, r.Name, r.UID, obj.GetUID())
	}
	return obj, nil
}

// ownerOf returns the workload controller behind group gk: the controller owner of its
// first pod that has one, else of its group object; a Job that a JobSet owns stands for
// its JobSet. It returns nil when there is none or it cannot be read. pending reports
// that the owner is being read and nothing of it is known yet: gk is translated again
// when it is in.
func (o *owners) ownerOf(gk string, pods []*corev1.Pod, obj client.Object) (owner *unstructured.Unstructured, pending bool) {
	r, ok := controllerRef(pods, obj)
	if !ok {
		delete(o.byGroup, gk)
		return nil, false
	}
	owner, pending = o.lookup(gk, r)
	if owner != nil && owner.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "batch", Kind: "Job"}) {
		if up := metav1.GetControllerOf(owner); up != nil && up.Kind == "JobSet" {
			js, jsPending := o.lookup(gk, refOf(r.Namespace, *up))
			pending = pending || jsPending
			if js != nil {
				owner = js
			}
		}
	}
	if owner != nil {
		o.byGroup[gk] = owner
	} else {
		delete(o.byGroup, gk)
	}
	return owner, pending
}

// controllerRef returns the controller reference of the first pod that has one, else
// the group object's.
func controllerRef(pods []*corev1.Pod, obj client.Object) (ownerRef, bool) {
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil {
			return refOf(p.Namespace, *ref), true
		}
	}
	if obj != nil {
		if ref := metav1.GetControllerOf(obj); ref != nil {
			return refOf(obj.GetNamespace(), *ref), true
		}
	}
	return ownerRef{}, false
}

func refOf(ns string, ref metav1.OwnerReference) ownerRef {
	return ownerRef{Namespace: ns, APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
}

// lookup returns the owner r names as last read, asking for a read when there is none or
// it is older than ownerTTL (a stale owner is returned meanwhile). Only owners of
// source.OwnerKinds are read (deploy/rbac grants get on exactly these); others (a
// ReplicaSet, an unknown operator's kind) are nil and never pending.
func (o *owners) lookup(gk string, r ownerRef) (*unstructured.Unstructured, bool) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil || source.OwnerKindOf(gv.WithKind(r.Kind).GroupKind()) == nil {
		return nil, false
	}
	key := r.key()
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.entries[key]
	if !ok || o.clock.Since(e.at) >= ownerTTL {
		if o.waiting[key] == nil {
			o.waiting[key] = map[string]bool{}
		}
		o.waiting[key][gk] = true
		o.reads.Add(r)
	}
	return e.obj, !ok
}

// objectOf returns group gk's owner as of its last translation, or nil.
func (o *owners) objectOf(gk string) *unstructured.Unstructured { return o.byGroup[gk] }

// changed records an owner as muster just wrote it (a Job it suspended or resumed), so
// that the next translation reads its annotations as they are now, never as a read
// begun before the write returns them.
func (o *owners) changed(obj runtime.Object) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return
	}
	owner := &unstructured.Unstructured{Object: u}
	key := types.NamespacedName{Namespace: owner.GetNamespace(), Name: string(owner.GetUID())}
	o.mu.Lock()
	o.epoch[key]++
	o.entries[key] = ownerEntry{obj: owner, at: o.clock.Now()}
	o.mu.Unlock()
}

// prune drops expired entries once the cache has grown; o.mu is held.
func (o *owners) prune() {
	const prune = 256
	if len(o.entries) < prune {
		return
	}
	now := o.clock.Now()
	for k, e := range o.entries {
		if now.Sub(e.at) >= ownerTTL {
			delete(o.entries, k)
			delete(o.epoch, k)
		}
	}
}

// memberFailed notes that member p of group gk failed: if a controller owns it, its
// owner is read again until ownerRecheckFor from now.
func (o *owners) memberFailed(gk string, p *corev1.Pod) {
	if metav1.GetControllerOf(p) == nil {
		return
	}
	now := o.clock.Now()
	r := o.rechecks[gk]
	if r == nil {
		r = &recheck{next: now.Add(ownerRecheckEvery)}
		o.rechecks[gk] = r
	}
	r.until = now.Add(ownerRecheckFor)
}

// recheck asks for a fresh read of the owner of each group due for a recheck; the read
// translates the group again. A group whose owner failed, that is gone (known reports
// the groups the mirror holds), or whose recheck time ran out is not rechecked any more.
func (o *owners) recheck(known func(string) bool) {
	now := o.clock.Now()
	for gk, r := range o.rechecks {
		owner := o.byGroup[gk]
		if !known(gk) || source.OwnerFailure(owner) != "" || now.After(r.until) {
			delete(o.rechecks, gk)
			continue
		}
		if r.next.After(now) {
			continue
		}
		r.next = now.Add(ownerRecheckEvery)
		if owner == nil {
			continue
		}
		key := types.NamespacedName{Namespace: owner.GetNamespace(), Name: string(owner.GetUID())}
		o.mu.Lock()
		if e, ok := o.entries[key]; ok {
			e.at = time.Time{} // expired: the next lookup reads it again
			o.entries[key] = e
		}
		o.mu.Unlock()
		o.lookup(gk, ownerRef{Namespace: owner.GetNamespace(), APIVersion: owner.GetAPIVersion(),
			Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID()})
	}
}

// nextRecheck returns when the next recheck is due, or zero if none is.
func (o *owners) nextRecheck() time.Time {
	var next time.Time
	for _, r := range o.rechecks {
		if next.IsZero() || r.next.Before(next) {
			next = r.next
		}
	}
	return next
}

// forget drops what is kept of a group the engine forgot.
func (o *owners) forget(gk string) {
	delete(o.byGroup, gk)
	delete(o.rechecks, gk)
}
