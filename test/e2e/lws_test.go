package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// lwsGroup is one replica group of a LeaderWorkerSet of size 2 whose gang scheduling is
// Volcano's (LeaderWorkerSet's gangSchedulingManagement with schedulerProvider
// volcano), as LeaderWorkerSet and the StatefulSet controller make it: a leader pod and
// a worker pod annotated scheduling.k8s.io/group-name with the group's PodGroup, named
// after the set, the group index and the template's revision, and that PodGroup, of
// minMember 2, in the queue the set names, owned by the leader pod. The sandbox runs no
// garbage collector: recreate deletes the PodGroup when the leader is gone, as it would.
type lwsGroup struct {
	t     *testing.T
	env   *sandboxtest.Env
	c     client.Client
	ns    string
	queue string
}

const (
	lwsLeader   = "infer-0"
	lwsWorker   = "infer-0-1"
	lwsPodGroup = "infer-0-5d8f7c9b4"
)

// create creates the pods, then the PodGroup owned by the leader, as LeaderWorkerSet's
// pod controller does once the leader exists.
func (l *lwsGroup) create() {
	l.t.Helper()
	ctx := context.Background()
	var leaderUID types.UID
	for _, name := range []string{lwsLeader, lwsWorker} {
		b := sandboxtest.Pod(l.ns, name).GPUs(1).SchedulerName("muster").
			Annotate("scheduling.k8s.io/group-name", lwsPodGroup).RestartPolicy(corev1.RestartPolicyOnFailure)
		if name == lwsWorker {
			b.Annotate(kubelet.AnnotationFailInit, "true") // it never becomes Ready
		}
		p := b.Obj()
		p.Labels = map[string]string{"leaderworkerset.sigs.k8s.io/name": "infer", "leaderworkerset.sigs.k8s.io/group-index": "0"}
		// A StatefulSet owns them (one that does not exist: the test creates the pods
		// again as it would), so muster does not create them again itself.
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name[:len(name)-2],
			UID: types.UID("uid-sts-" + name), Controller: ptr.To(true)}}
		created, err := l.env.Kube.CoreV1().Pods(l.ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			l.t.Fatalf("creating pod %s: %v", name, err)
		}
		if name == lwsLeader {
			leaderUID = created.UID
		}
	}
	pg := &volcanov1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: lwsPodGroup, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Pod", Name: lwsLeader, UID: leaderUID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: volcanov1beta1.PodGroupSpec{MinMember: 2, Queue: l.queue},
	}
	if err := l.c.Create(ctx, pg); err != nil {
		l.t.Fatalf("creating PodGroup %s: %v", lwsPodGroup, err)
	}
}

// recreate deletes the PodGroup once muster has deleted the leader, as the garbage
// collector does, before the worker is gone too, and creates them all again once it is.
func (l *lwsGroup) recreate() {
	l.t.Helper()
	gone := func(name string) {
		l.env.WaitFor(l.t, "muster to delete pod "+name, func(ctx context.Context) (bool, error) {
			_, err := l.env.Kube.CoreV1().Pods(l.ns).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	}
	gone(lwsLeader)
	pg := &volcanov1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: lwsPodGroup}}
	if err := l.c.Delete(context.Background(), pg); err != nil {
		l.t.Fatalf("deleting PodGroup %s as the garbage collector would: %v", lwsPodGroup, err)
	}
	l.env.WaitFor(l.t, "PodGroup "+lwsPodGroup+" gone", func(ctx context.Context) (bool, error) {
		err := l.c.Get(ctx, client.ObjectKeyFromObject(pg), &volcanov1beta1.PodGroup{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	gone(lwsWorker)
	l.create()
}

// record reads the lifecycle record muster writes on the PodGroup, for advancePast.
func (l *lwsGroup) record(ctx context.Context) (musterv1alpha1.GroupLifecycle, bool) {
	pg := &volcanov1beta1.PodGroup{}
	if err := l.c.Get(ctx, client.ObjectKey{Namespace: l.ns, Name: lwsPodGroup}, pg); err != nil {
		return musterv1alpha1.GroupLifecycle{}, false
	}
	rec, err := recordOn(pg.Annotations, "PodGroup "+lwsPodGroup)
	return rec, err == nil
}

// waitRecord waits until the PodGroup's record says phase after failures failed attempts.
func (l *lwsGroup) waitRecord(phase string, failures int) musterv1alpha1.GroupLifecycle {
	l.t.Helper()
	var rec musterv1alpha1.GroupLifecycle
	defer func() { // also when WaitFor gives up
		if l.t.Failed() {
			l.t.Logf("the PodGroup's last record: %s, attempt %d, %d failures: %s", rec.Phase, rec.Attempt, rec.Failures, rec.Message)
		}
	}()
	l.env.WaitFor(l.t, "the LeaderWorkerSet group "+phase+", recorded on its new PodGroup", func(ctx context.Context) (bool, error) {
		r, ok := l.record(ctx)
		rec = r
		return ok && r.Phase == phase && r.Failures == failures, nil
	})
	return rec
}

// TestLeaderWorkerSetGroupFailsAfterItsRetries: a LeaderWorkerSet replica group under
// Volcano's gang scheduling whose worker never initialises, through muster serve as
// deployed. Each eviction at the start timeout deletes the leader, and the PodGroup,
// which the leader owns, goes with it; the pods and a PodGroup of the same name come
// back. The group keeps its attempts across that: it backs off, is retried once, and
// fails, and the pods created after that stay unbound. (Its group used to be cancelled
// with the PodGroup and started over at attempt 1 with the new one: it never failed,
// and held its GPUs for a start timeout after every eviction.)
func TestLeaderWorkerSetGroupFailsAfterItsRetries(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "lws", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	queue := ns + "-lws"
	createQueue(t, c, queue, 2, &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		func(q *musterv1alpha1.Queue) {
			q.Spec.Defaults = &musterv1alpha1.GroupPolicy{
				StartTimeout: &metav1.Duration{Duration: 10 * time.Minute},
				MaxRetries:   ptr.To[int32](1),
				BackoffBase:  &metav1.Duration{Duration: 5 * time.Minute},
			}
		})
	m := startMuster(t, env, musterOptions{clock: true})
	l := &lwsGroup{t: t, env: env, c: c, ns: ns, queue: queue}
	l.create()

	m.advancePast(t, env, "Starting", l.record) // attempt 1's start timeout
	l.recreate()
	if rec := l.waitRecord("Backoff", 1); rec.Attempt != 1 {
		t.Fatalf("on the new PodGroup: expected the group backing off after attempt 1, found attempt %d", rec.Attempt)
	}
	m.advancePast(t, env, "Backoff", l.record)
	m.advancePast(t, env, "Starting", l.record) // attempt 2's start timeout
	l.recreate()
	failed := l.waitRecord("Failed", 2)
	t.Logf("failed: %s: %s", failed.Reason, failed.Message)
	if len(failed.Attempts) != 2 {
		t.Errorf("expected 2 attempts in the record, found %+v", failed.Attempts)
	}
	// Every timer a group can have fires: the pods of the failed group stay unbound.
	m.AdvanceClock(t, m.pastEveryTimer())
	for _, name := range []string{lwsLeader, lwsWorker} {
		p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s of the failed group was bound to %s", name, p.Spec.NodeName)
		}
	}
	if rec, _ := l.record(context.Background()); rec.Phase != "Failed" {
		t.Errorf("after every timer: expected the group still Failed, found %s", rec.Phase)
	}
}
