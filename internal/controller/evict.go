package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// Keys of the ConfigMaps that record pods muster recreates. They live in muster's own
// namespace (Configuration.namespace), where tenants cannot write, and are signed (see
// trust.go): a record is the pod muster will create, in any namespace, so one a
// tenant could write would let them create pods where they may not.
const (
	// RecreateLabel marks a ConfigMap that records a pod muster evicted and will
	// create again, because no controller owns it.
	RecreateLabel      = "muster.dev/recreate"
	recordPodKey       = "pod"
	recordUIDKey       = "uid"
	recordSignatureKey = "signature"
)

// recreation is a recorded pod waiting for its old pod to be gone.
type recreation struct {
	uid       types.UID
	pod       *corev1.Pod
	configMap string
}

// evictor deletes the members the engine evicts, with an Event and the DisruptionTarget
// condition saying why. A pod that no controller owns is recorded first, in a signed
// ConfigMap of muster's namespace, and created again once it is gone. The loop decides
// each eviction (evict) and evictWorkers send them, off the loop: a deletion that the
// API server holds (a slow admission webhook on pods) holds up neither the queue nor
// the group's other evictions. An eviction that fails is sent again, after evictRetry
// and up to evictRetryMax apart, until the pod is gone: the engine asks once per pod
// and waits for it to go.
type evictor struct {
	*kit
	eng    *engine.Engine
	mirror *mirror
	signer signer
	work   workqueue.TypedRateLimitingInterface[string]
	// recreations holds the keys of recorded pods whose old pod is gone, to be created
	// again by a worker of their own.
	recreations workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// pending holds, by pod key, the evictions decided and not yet taken by a worker.
	pending map[string]podEviction
	// recreate holds the recorded pods to create again once their old pod is gone.
	recreate map[string]*recreation
}

// podEviction is one pod to evict, as the loop decided it.
type podEviction struct {
	pod *corev1.Pod
	ev  engine.Eviction
	// recordFirst says the pod is to be recorded, with the group's lifecycle record
	// groupRecord, before it is deleted.
	recordFirst bool
	groupRecord string
	// tries counts the times it was sent: the Event and the DisruptionTarget condition
	// go with the first.
	tries int
}

// evictWorkers is how many evictions are sent at once; evictRetry and evictRetryMax
// are the first and the longest wait before a failed one is sent again.
const (
	evictWorkers  = 8
	evictRetry    = time.Second
	evictRetryMax = time.Minute
)

func newEvictor(k *kit, eng *engine.Engine, m *mirror) *evictor {
	return &evictor{
		kit: k, eng: eng, mirror: m,
		work: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](evictRetry, evictRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "evictions"}),
		recreations: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](evictRetry, evictRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "recreations"}),
		pending: map[string]podEviction{}, recreate: map[string]*recreation{},
	}
}

// evict queues the deletion of a member pod, with an Event saying why. A pod that no
// controller owns is recorded first and created again once it is gone.
func (v *evictor) evict(ev engine.Eviction) {
	p := v.mirror.pod(ev.Pod)
	if p == nil {
		return
	}
	if pe, ok := v.decide(p, ev); ok {
		v.mu.Lock()
		v.pending[ev.Pod] = pe
		v.mu.Unlock()
		v.work.Add(ev.Pod)
	}
}

// run sends the queued evictions until ctx is done.
func (v *evictor) run(ctx context.Context) { drain(ctx, evictWorkers, v.work, v.evictNext) }

// evictNext sends the next queued eviction, and queues it again if it failed; false
// once the queue is shut down.
func (v *evictor) evictNext(ctx context.Context) bool {
	return retried(v.work, func(key string) bool {
		pe, ok := taken(&v.mu, v.pending, key)
		if !ok {
			return false
		}
		err := v.send(ctx, &pe)
		if err == nil || ctx.Err() != nil {
			return false
		}
		v.log.Error(err, "evicting a pod; sending it again", "pod", key, "tries", pe.tries)
		putBack(&v.mu, v.pending, key, pe)
		return true
	})
}

// evictPod deletes p at once, on the caller's goroutine (the recovery before the loop
// starts), recording it first when no controller owns it.
func (v *evictor) evictPod(ctx context.Context, p *corev1.Pod, ev engine.Eviction) {
	if pe, ok := v.decide(p, ev); ok {
		if err := v.send(ctx, &pe); err != nil {
			v.log.Error(err, "evicting a pod", "pod", ev.Pod)
		}
	}
}

// decide returns the eviction of p, on the loop's goroutine (it reads the engine and
// the mirror), or false when p is being deleted already. Members of a cancelled group
// are not recreated: cancellation releases everything.
func (v *evictor) decide(p *corev1.Pod, ev engine.Eviction) (podEviction, bool) {
	if p.DeletionTimestamp != nil {
		return podEviction{}, false
	}
	pe := podEviction{pod: p, ev: ev}
	if metav1.GetControllerOf(p) == nil && v.recorded(ev.Pod) == nil && ev.Reason != lifecycle.ReasonCancelled {
		pe.recordFirst, pe.groupRecord = true, v.lifecycleRecord(ev.Group)
	}
	return pe, true
}

// recorded returns the record of the pod with key, or nil.
func (v *evictor) recorded(key string) *recreation {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.recreate[key]
}

// send records the pod if it is to be and is not yet, then says why and deletes it. It
// returns an error if the pod may still be there: the record or the deletion failed. A
// pod gone, or replaced by another of its name, is evicted.
func (v *evictor) send(ctx context.Context, pe *podEviction) error {
	p, ev := pe.pod, pe.ev
	pe.tries++
	if pe.recordFirst && v.recorded(ev.Pod) == nil {
		r, err := v.record(ctx, p, pe.groupRecord)
		if err != nil {
			return fmt.Errorf("recording pod %s before evicting it: %w", ev.Pod, err)
		}
		v.mu.Lock()
		v.recreate[ev.Pod] = r
		v.mu.Unlock()
	}
	if pe.tries == 1 {
		v.event(p, corev1.EventTypeWarning, ev.Reason, ev.Message)
		if ev.Reason != lifecycle.ReasonCancelled {
			v.markDisrupted(ctx, p, ev)
		}
	}
	uid := p.UID
	err := v.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s: %w", ev.Pod, err)
	}
	return nil
}

// markDisrupted gives p the DisruptionTarget condition before muster deletes it, as
// kube-scheduler does for the pods it preempts: a Job whose podFailurePolicy ignores
// DisruptionTarget (`action: Ignore, onPodConditions: [{type: DisruptionTarget}]`) then
// does not count muster's evictions against its backoffLimit, while a deleted pod
// without it counts as failed. The reason is PreemptionByScheduler for a preemption and
// the eviction's own reason (StartTimeout, RecoveryTimeout, ...) otherwise. A pod that
// cannot be marked is deleted all the same.
func (v *evictor) markDisrupted(ctx context.Context, p *corev1.Pod, ev engine.Eviction) {
	reason := ev.Reason
	if reason == lifecycle.ReasonPreempted {
		reason = corev1.PodReasonPreemptionByScheduler
	}
	patch := map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason,
		Message: "muster: " + ev.Message, LastTransitionTime: metav1.NewTime(v.clock.Now()),
	}}}}
	data, err := json.Marshal(patch)
	if err == nil {
		_, err = v.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	}
	if err != nil && !apierrors.IsNotFound(err) {
		v.log.Error(err, "marking a pod DisruptionTarget before evicting it", "pod", ev.Pod)
	}
}

// recordName is the ConfigMap, in muster's namespace, that records pod ns/name: the
// pod's namespace and name when they fit (a namespace name holds no dot, so NS.NAME
// names one pod), a digest of them otherwise.
func recordName(ns, name string) string {
	const prefix = "muster-recreate-"
	if full := prefix + ns + "." + name; len(full) <= 253 {
		return full
	}
	sum := sha256.Sum256([]byte(ns + "/" + name))
	return prefix + hex.EncodeToString(sum[:16])
}

// lifecycleRecord returns the lifecycle record of a group that has no object, as it is
// now, or "" for a group with an object (which carries the record) or unknown.
func (v *evictor) lifecycleRecord(gk string) string {
	if v.mirror.object(gk) != nil {
		return ""
	}
	st, ok := v.eng.Group(gk)
	if !ok {
		return ""
	}
	record, _ := engine.EncodeRecord(st) // a record always encodes; "" keeps the pod's
	return record
}

// record writes the ConfigMap from which pod is created again. A record of the group
// (see lifecycleRecord) replaces the pod's: a plain group's record lives on its pods,
// and the pod created again must carry the group's state after the eviction, for a
// muster that restarts before it writes the record again.
func (v *evictor) record(ctx context.Context, p *corev1.Pod, groupRecord string) (*recreation, error) {
	again := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: map[string]string{},
		},
		Spec: *p.Spec.DeepCopy(),
	}
	for k, v := range p.Annotations {
		if k != musterv1alpha1.PlacementAnnotation {
			again.Annotations[k] = v
		}
	}
	if groupRecord != "" {
		again.Annotations[musterv1alpha1.LifecycleAnnotation] = groupRecord
	}
	again.Spec.NodeName = ""
	data, err := json.Marshal(again)
	if err != nil {
		return nil, fmt.Errorf("encoding pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	name := recordName(p.Namespace, p.Name)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v.cfg.Namespace, Labels: map[string]string{RecreateLabel: "true"}},
		Data: map[string]string{
			recordPodKey: string(data), recordUIDKey: string(p.UID),
			recordSignatureKey: v.signer.signRecord(name, string(data), string(p.UID)),
		},
	}
	cms := v.kube.CoreV1().ConfigMaps(v.cfg.Namespace)
	_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("writing ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return &recreation{uid: p.UID, pod: again, configMap: cm.Name}, nil
}

// recreateIfRecorded has a recorded pod created again once its old pod is gone
// (current is nil), and its record forgotten once a pod of that name exists that is not
// the old one; a worker of their own does both (recreateNext), off the loop.
func (v *evictor) recreateIfRecorded(_ context.Context, key string, current *corev1.Pod) {
	r := v.recorded(key)
	if r == nil || (current != nil && current.UID == r.uid) {
		return
	}
	v.recreations.Add(key)
}

// runRecreations creates the recorded pods again until ctx is done.
func (v *evictor) runRecreations(ctx context.Context) { drain(ctx, 1, v.recreations, v.recreateNext) }

// recreateNext carries out the next queued recreation, and queues it again if it failed
// (after evictRetry, then up to evictRetryMax apart); false once the queue is shut down.
// A pod whose creation failed keeps its record: it is created again, not lost.
func (v *evictor) recreateNext(ctx context.Context) bool {
	return retried(v.recreations, func(key string) bool {
		err := v.recreateOne(ctx, key)
		if err == nil || ctx.Err() != nil {
			return false
		}
		v.log.Error(err, "recreating an evicted pod that has no controller; sending it again", "pod", key)
		return true
	})
}

// recreateOne creates the recorded pod of key if no pod of that name exists, and then,
// or when one that is not the old pod exists, drops the record. It does nothing while
// the old pod is still there.
func (v *evictor) recreateOne(ctx context.Context, key string) error {
	r := v.recorded(key)
	if r == nil {
		return nil
	}
	current := &corev1.Pod{}
	switch err := v.cache.Get(ctx, splitKey(key), current); {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	if current != nil && current.UID == r.uid {
		return nil // not gone yet: the loop queues it again when it is
	}
	if current == nil {
		_, err := v.kube.CoreV1().Pods(r.pod.Namespace).Create(ctx, r.pod.DeepCopy(), metav1.CreateOptions{})
		switch {
		case err == nil:
			v.log.V(1).Info("recreated an evicted pod that has no controller", "pod", key)
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("creating pod %s: %w", key, err)
		}
	}
	v.mu.Lock()
	delete(v.recreate, key)
	v.mu.Unlock()
	err := v.kube.CoreV1().ConfigMaps(v.cfg.Namespace).Delete(ctx, r.configMap, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		v.log.Error(err, "deleting the record of a recreated pod", "configMap", v.cfg.Namespace+"/"+r.configMap)
	}
	return nil
}

// loadRecords reads the records a previous leader left in muster's namespace, and
// carries out each that verifies (see verifyRecord): a pod still present is evicted
// again, a pod gone is created again. A record that does not verify is ignored, with
// an UntrustedRecord Event on it.
func (v *evictor) loadRecords(ctx context.Context) error {
	list, err := v.kube.CoreV1().ConfigMaps(v.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: RecreateLabel + "=true"})
	if err != nil {
		return fmt.Errorf("listing the records of pods to recreate in namespace %s: %w", v.cfg.Namespace, err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		p, bad := v.signer.verifyRecord(cm, v.cfg.SchedulerNames())
		if bad != nil {
			v.kit.untrusted(cm, KindRecord, bad)
			continue
		}
		key := podKey(p)
		r := &recreation{uid: types.UID(cm.Data[recordUIDKey]), pod: p, configMap: cm.Name}
		v.mu.Lock()
		v.recreate[key] = r
		v.mu.Unlock()
		current := &corev1.Pod{}
		if err := v.cache.Get(ctx, splitKey(key), current); err != nil {
			current = nil
		}
		if current != nil && current.UID == r.uid {
			uid := current.UID
			_ = v.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			continue
		}
		v.recreateIfRecorded(ctx, key, current)
	}
	return nil
}
