package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// A group whose members are all the pods of one batch Job is evicted by suspending the
// Job (DESIGN §7) rather than by deleting its pods: the Job controller deletes them
// without counting them as failed, so muster's retries spend neither the Job's
// backoffLimit nor its pod-failure backoff (10 s, doubled per failed pod, up to 6 min,
// before it creates pods again). muster resumes the Job when the group's backoff ends,
// and leaves it suspended when the group has Failed. The Job carries the
// muster.dev/suspended annotation while muster holds it suspended, and the group's
// lifecycle record, from which a restarted muster resumes both the Job and the group.

// suspender evicts a group that one batch Job owns whole by suspending the Job, and
// resumes the Job when the group's backoff ends. The loop decides both, and owns the
// Jobs it suspended and the pods of those Jobs on their way out; one worker sends the
// Jobs' patches, off the loop (run), and hands each suspension's answer back to the
// loop (takeAnswers). (The loop patched the Jobs itself: a patch the API server held
// held up all scheduling for up to the request's timeout.)
type suspender struct {
	*kit
	eng    *engine.Engine
	mirror *mirror
	owners *owners
	wake   func()
	// suspended holds the Jobs muster suspended and will resume; leaving holds, by UID,
	// the pods of the Jobs it suspended, which are no members of any group while they
	// go, and their eviction's cleanup. suspending holds, by Job, the suspensions sent
	// and not answered yet, and resuming the resumptions.
	suspended  map[types.NamespacedName]*suspension
	leaving    map[types.UID]*cleanup
	suspending map[types.NamespacedName]*suspending
	resuming   map[types.NamespacedName]*suspension

	work workqueue.TypedRateLimitingInterface[types.NamespacedName]
	mu   sync.Mutex
	// patches holds, by Job, the patch to send that was not sent yet; answers the
	// suspensions sent and the resumptions done, for the loop.
	patches map[types.NamespacedName]jobPatch
	answers []jobAnswer
}

// suspending is a suspension sent to evict a group: the group, the evictions it
// carries out (the pods are deleted instead if it fails), and what the loop does once
// it is done.
type suspending struct {
	group     string
	evictions []engine.Eviction
	resumeAt  time.Time
	message   string
}

// jobPatch is a patch of a Job the worker sends: a suspension, or a resumption.
type jobPatch struct {
	suspend bool
	data    []byte
}

// jobAnswer is the API server's answer to a jobPatch: the Job as written, or why not.
type jobAnswer struct {
	job types.NamespacedName
	jobPatch
	obj *batchv1.Job
	err error
}

// jobPatchRetry and jobPatchRetryMax bound the wait before a failed resumption is sent
// again: the first waits jobPatchRetry, each next one twice as long. A failed suspension
// is not sent again: the group's pods are deleted instead.
const (
	jobPatchRetry    = time.Second
	jobPatchRetryMax = time.Minute
)

func newSuspender(k *kit, eng *engine.Engine, m *mirror, o *owners, wake func()) *suspender {
	return &suspender{kit: k, eng: eng, mirror: m, owners: o, wake: wake,
		suspended: map[types.NamespacedName]*suspension{}, leaving: map[types.UID]*cleanup{},
		suspending: map[types.NamespacedName]*suspending{}, resuming: map[types.NamespacedName]*suspension{},
		work: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](jobPatchRetry, jobPatchRetryMax),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "jobpatches"}),
		patches: map[types.NamespacedName]jobPatch{},
	}
}

// isLeaving reports whether the pod of uid is one of a Job muster suspended, on its way
// out.
func (u *suspender) isLeaving(uid types.UID) bool { return u.leaving[uid] != nil }

// suspension is a Job muster suspended and will resume, and when.
type suspension struct {
	group    string
	resumeAt time.Time
}

// cleanup is the eviction of a suspended Job's pods: when it began (zero: before muster
// started) and how many of them are left. When the last is gone,
// muster_group_cleanup_seconds observes it, as it does for the groups the engine evicts.
type cleanup struct {
	since time.Time
	left  int
}

// gone notes that a pod is gone, closing its Job's cleanup if it was the last.
func (u *suspender) gone(uid types.UID) {
	c := u.leaving[uid]
	if c == nil {
		return
	}
	delete(u.leaving, uid)
	if c.left--; c.left == 0 && !c.since.IsZero() {
		u.metrics.Cleanup.Observe(u.clock.Since(c.since).Seconds())
	}
}

// suspendable returns the batch Job to suspend to evict group gk, or nil: the group's
// members must all be controlled by one batch/v1 Job, and the eviction must not be a
// cancellation (the owner removed the pods already). A Job that something else controls
// (a JobSet) is not suspended: its controller would resume it.
func (u *suspender) suspendable(gk string, ev engine.Eviction) *types.NamespacedName {
	if ev.Reason == lifecycle.ReasonCancelled {
		return nil
	}
	var job *metav1.OwnerReference
	ns := ""
	for _, p := range u.mirror.memberList(gk) {
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.APIVersion != "batch/v1" || ref.Kind != "Job" || (job != nil && ref.UID != job.UID) {
			return nil
		}
		job, ns = ref, p.Namespace
	}
	if job == nil {
		return nil
	}
	// The group's owner as last read (never read here: the loop does not wait on the
	// API server); a Job not read yet is not suspended, its pods are deleted.
	owner := u.owners.objectOf(gk)
	if owner == nil || owner.GetUID() != job.UID || metav1.GetControllerOf(owner) != nil {
		return nil
	}
	return &types.NamespacedName{Namespace: ns, Name: job.Name}
}

// evict evicts group gk by suspending its Job, job (suspendable): it sends the patch
// that suspends the Job and records on it why and the group's lifecycle after the
// eviction. The loop carries out the rest when the answer comes (takeAnswers). Further
// evictions of the group while the patch is in flight go with it.
func (u *suspender) evict(gk string, job *types.NamespacedName, evs []engine.Eviction) error {
	if s := u.suspending[*job]; s != nil {
		s.evictions = append(s.evictions, evs...)
		return nil
	}
	ev := evs[0]
	st, ok := u.eng.Group(gk)
	if !ok {
		return fmt.Errorf("group %s: expected it known to the engine", gk)
	}
	record, err := engine.EncodeRecord(st)
	if err != nil {
		return err
	}
	data, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{
			musterv1alpha1.SuspendedAnnotation: ev.Reason, musterv1alpha1.LifecycleAnnotation: record,
		}},
		"spec": map[string]any{"suspend": true},
	})
	if err != nil {
		return fmt.Errorf("encoding a patch of Job %s: %w", job, err)
	}
	msg := fmt.Sprintf("muster suspended the Job to evict its group %s: %s", groupName(gk), ev.Message)
	if st.Phase == lifecycle.Failed {
		msg += "; the group has Failed, and the Job stays suspended"
	}
	u.suspending[*job] = &suspending{group: gk, evictions: slices.Clone(evs), resumeAt: st.ResumeAt(u.clock.Now()), message: msg}
	u.send(*job, jobPatch{suspend: true, data: data})
	return nil
}

// send queues patch of job, in place of any not sent yet.
func (u *suspender) send(job types.NamespacedName, patch jobPatch) {
	u.mu.Lock()
	u.patches[job] = patch
	u.mu.Unlock()
	u.work.Add(job)
}

// takeAnswers acts, on the loop, on the answers to the Jobs' patches that came since the
// last call. A suspended Job keeps its group's state from now on: its pods leave
// the group at once, pods it creates on resumption start the group from the record, and
// those of a new Job of the same group name (created before the old pods are gone) start
// it anew. A suspension that failed evicts the group by deleting its pods instead.
func (u *suspender) takeAnswers(ctx context.Context, evictor *evictor) {
	u.mu.Lock()
	answers := u.answers
	u.answers = nil
	u.mu.Unlock()
	for _, a := range answers {
		if !a.suspend {
			u.resumed(a)
			continue
		}
		s := u.suspending[a.job]
		delete(u.suspending, a.job)
		if s == nil {
			continue
		}
		if a.err != nil {
			u.log.Error(a.err, "suspending a Job to evict its group; deleting its pods instead", "group", s.group, "job", a.job)
			for _, ev := range s.evictions {
				evictor.evict(ev)
			}
			continue
		}
		delete(u.resuming, a.job)
		if !s.resumeAt.IsZero() {
			u.suspended[a.job] = &suspension{group: s.group, resumeAt: s.resumeAt}
		}
		members := u.mirror.memberList(s.group)
		c := &cleanup{since: u.clock.Now(), left: len(members)}
		for _, p := range members {
			u.leaving[p.UID] = c
			u.mirror.applyPod(ctx, podKey(p))
		}
		u.eng.HandOff(s.group)
		u.owners.changed(a.obj)
		u.event(a.obj, corev1.EventTypeWarning, s.evictions[0].Reason, s.message)
	}
}

// resumed notes a Job resumed, or gone before it could be.
func (u *suspender) resumed(a jobAnswer) {
	sp := u.resuming[a.job]
	delete(u.resuming, a.job)
	if a.err != nil || sp == nil {
		return // the Job is gone
	}
	u.owners.changed(a.obj)
	msg := "muster resumed the Job: its group's backoff ended" // found at start: the group is not known yet
	if sp.group != "" {
		msg = fmt.Sprintf("muster resumed the Job: the backoff of its group %s ended", groupName(sp.group))
	}
	u.event(a.obj, corev1.EventTypeNormal, "Resumed", msg)
}

// resumeDue sends the resumptions of the Jobs whose time has come, and returns when the
// next one is due (zero: none).
func (u *suspender) resumeDue() time.Time {
	if len(u.suspended) == 0 {
		return time.Time{} // the loop's every pass: nothing to sort
	}
	now := u.clock.Now()
	var next time.Time
	byName := func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) }
	for _, job := range slices.SortedFunc(maps.Keys(u.suspended), byName) {
		sp := u.suspended[job]
		if sp.resumeAt.After(now) {
			if next.IsZero() || sp.resumeAt.Before(next) {
				next = sp.resumeAt
			}
			continue
		}
		delete(u.suspended, job)
		u.resuming[job] = sp
		u.send(job, jobPatch{data: resumePatch})
	}
	return next
}

// resumePatch resumes a Job muster suspended.
var resumePatch = []byte(`{"metadata":{"annotations":{"` + musterv1alpha1.SuspendedAnnotation + `":null}},"spec":{"suspend":false}}`)

// run sends the queued patches until ctx is done.
func (u *suspender) run(ctx context.Context) { drain(ctx, 1, u.work, u.sendNext) }

// sendNext sends the next queued patch; false once the queue is shut down. A resumption
// that fails is sent again (jobPatchRetry, up to jobPatchRetryMax apart) unless the Job
// is gone; the answer to a suspension, and to a resumption done, goes to the loop.
func (u *suspender) sendNext(ctx context.Context) bool {
	return retried(u.work, func(job types.NamespacedName) bool {
		patch, ok := taken(&u.mu, u.patches, job)
		if !ok {
			return false
		}
		obj, err := u.patchJob(ctx, job, patch.data)
		if ctx.Err() != nil {
			return false
		}
		if err != nil && !patch.suspend && !apierrors.IsNotFound(err) {
			u.log.Error(err, "resuming a Job muster suspended; sending it again", "job", job)
			putBack(&u.mu, u.patches, job, patch)
			return true
		}
		u.mu.Lock()
		u.answers = append(u.answers, jobAnswer{job: job, jobPatch: patch, obj: obj, err: err})
		u.mu.Unlock()
		u.wake()
		return false
	})
}

// findSuspended reads back, when muster starts, the Jobs an earlier muster suspended:
// each is resumed at the end of the backoff its lifecycle record names, or left
// suspended if its group Failed. The pods such a Job still has are on their way out, as
// those of a Job this muster suspends are (leaveAll).
func (u *suspender) findSuspended(ctx context.Context) error {
	jobs, err := u.kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Jobs to find those muster suspended: %w", err)
	}
	now := u.clock.Now()
	found := map[types.UID]bool{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if _, ours := j.Annotations[musterv1alpha1.SuspendedAnnotation]; !ours || j.Spec.Suspend == nil || !*j.Spec.Suspend {
			continue
		}
		found[j.UID] = true
		sp := &suspension{resumeAt: now}
		if rec, ok, err := musterv1alpha1.RecordIn(j.Annotations); ok && err == nil {
			switch {
			case rec.Phase == string(lifecycle.Failed):
				continue // it stays suspended
			case rec.WakeAt != nil && rec.WakeAt.After(now):
				sp.resumeAt = rec.WakeAt.Time
			}
		}
		u.suspended[types.NamespacedName{Namespace: j.Namespace, Name: j.Name}] = sp
	}
	return u.leaveAll(ctx, found)
}

// leaveAll marks the pods that the Jobs of jobs (by UID), which an earlier muster
// suspended, still have as on their way out: no members of any group, so that a Job's
// group starts from the record on the Job when the Job is resumed, never from them or
// from the record one of them carries, which may lag the Job's. Their cleanup began
// before this muster and is not measured.
func (u *suspender) leaveAll(ctx context.Context, jobs map[types.UID]bool) error {
	if len(jobs) == 0 {
		return nil
	}
	pods := &corev1.PodList{}
	if err := u.cache.List(ctx, pods); err != nil {
		return fmt.Errorf("listing the pods of the Jobs muster suspended: %w", err)
	}
	c := &cleanup{} // one for all: none is measured
	for i := range pods.Items {
		if ref := metav1.GetControllerOf(&pods.Items[i]); ref != nil && jobs[ref.UID] {
			u.leaving[pods.Items[i].UID] = c
			c.left++
		}
	}
	return nil
}

// patchJob applies a JSON merge patch to a Job.
func (u *suspender) patchJob(ctx context.Context, job types.NamespacedName, data []byte) (*batchv1.Job, error) {
	obj, err := u.kube.BatchV1().Jobs(job.Namespace).Patch(ctx, job.Name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("patching Job %s: %w", job, err)
	}
	obj.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("Job"))
	return obj, nil
}
