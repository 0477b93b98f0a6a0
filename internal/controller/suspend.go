package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
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
// resumes the Job when the group's backoff ends. It runs on the loop's goroutine and
// owns the Jobs it suspended and the pods of those Jobs on their way out.
type suspender struct {
	*kit
	eng    *engine.Engine
	mirror *mirror
	owners *owners
	// suspended holds the Jobs muster suspended and will resume; leaving holds, by UID,
	// the pods of the Jobs it suspended, which are no members of any group while they
	// go, and their eviction's cleanup.
	suspended map[types.NamespacedName]*suspension
	leaving   map[types.UID]*cleanup
}

func newSuspender(k *kit, eng *engine.Engine, m *mirror, o *owners) *suspender {
	return &suspender{kit: k, eng: eng, mirror: m, owners: o,
		suspended: map[types.NamespacedName]*suspension{}, leaving: map[types.UID]*cleanup{}}
}

// isLeaving reports whether the pod of uid is one of a Job muster suspended, on its way
// out.
func (u *suspender) isLeaving(uid types.UID) bool { return u.leaving[uid] != nil }

// suspension is a Job muster suspended and will resume, and when.
type suspension struct {
	group    string
	resumeAt time.Time
}

// cleanup is the eviction of a suspended Job's pods: when it began and how many of them
// are left. When the last is gone, muster_group_cleanup_seconds observes it, as it does
// for the groups the engine evicts.
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
	if c.left--; c.left == 0 {
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

// suspend suspends job to evict group gk, recording on it why and the group's lifecycle
// after the eviction, and remembers when to resume it.
func (u *suspender) suspend(ctx context.Context, gk string, job *types.NamespacedName, ev engine.Eviction) error {
	st, ok := u.eng.Group(gk)
	if !ok {
		return fmt.Errorf("group %s: expected it known to the engine", gk)
	}
	record, err := explain.EncodeRecord(st)
	if err != nil {
		return err
	}
	patch := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{
			musterv1alpha1.SuspendedAnnotation: ev.Reason, musterv1alpha1.LifecycleAnnotation: record,
		}},
		"spec": map[string]any{"suspend": true},
	}
	obj, err := u.patchJob(ctx, *job, patch)
	if err != nil {
		return err
	}
	if at := st.ResumeAt(u.clock.Now()); !at.IsZero() {
		u.suspended[*job] = &suspension{group: gk, resumeAt: at}
	}
	// The Job keeps the group's state now: its pods leave the group at once, pods it
	// creates on resumption start the group from the record, and those of a new Job of
	// the same group name (created before the old pods are gone) start it anew.
	members := u.mirror.memberList(gk)
	c := &cleanup{since: u.clock.Now(), left: len(members)}
	for _, p := range members {
		u.leaving[p.UID] = c
		u.mirror.applyPod(ctx, podKey(p))
	}
	u.eng.HandOff(gk)
	u.owners.changed(obj)
	msg := fmt.Sprintf("muster suspended the Job to evict its group %s: %s", groupName(gk), ev.Message)
	if st.Phase == lifecycle.Failed {
		msg += "; the group has Failed, and the Job stays suspended"
	}
	u.event(obj, corev1.EventTypeWarning, ev.Reason, msg)
	return nil
}

// resumeDue resumes the Jobs whose time has come, and returns when the next one is due
// (zero: none).
func (u *suspender) resumeDue(ctx context.Context) time.Time {
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
		patch := map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{musterv1alpha1.SuspendedAnnotation: nil}},
			"spec":     map[string]any{"suspend": false},
		}
		obj, err := u.patchJob(ctx, job, patch)
		switch {
		case apierrors.IsNotFound(err):
			delete(u.suspended, job)
		case err != nil:
			u.log.Error(err, "resuming a Job muster suspended; trying again", "job", job)
			if retry := now.Add(time.Second); next.IsZero() || retry.Before(next) {
				next = retry
			}
		default:
			delete(u.suspended, job)
			u.owners.changed(obj)
			msg := "muster resumed the Job: its group's backoff ended" // found at start: the group is not known yet
			if sp.group != "" {
				msg = fmt.Sprintf("muster resumed the Job: the backoff of its group %s ended", groupName(sp.group))
			}
			u.event(obj, corev1.EventTypeNormal, "Resumed", msg)
		}
	}
	return next
}

// findSuspended reads back, when muster starts, the Jobs an earlier muster suspended:
// each is resumed at the end of the backoff its lifecycle record names, or left
// suspended if its group Failed.
func (u *suspender) findSuspended(ctx context.Context) error {
	jobs, err := u.kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Jobs to find those muster suspended: %w", err)
	}
	now := u.clock.Now()
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if _, ours := j.Annotations[musterv1alpha1.SuspendedAnnotation]; !ours || j.Spec.Suspend == nil || !*j.Spec.Suspend {
			continue
		}
		sp := &suspension{resumeAt: now}
		if rec, ok, err := explain.RecordIn(j.Annotations); ok && err == nil {
			switch {
			case rec.Phase == string(lifecycle.Failed):
				continue // it stays suspended
			case rec.WakeAt != nil && rec.WakeAt.After(now):
				sp.resumeAt = rec.WakeAt.Time
			}
		}
		u.suspended[types.NamespacedName{Namespace: j.Namespace, Name: j.Name}] = sp
	}
	return nil
}

// patchJob applies a JSON merge patch to a Job.
func (u *suspender) patchJob(ctx context.Context, job types.NamespacedName, patch map[string]any) (*batchv1.Job, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encoding a patch of Job %s: %w", job, err)
	}
	obj, err := u.kube.BatchV1().Jobs(job.Namespace).Patch(ctx, job.Name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("patching Job %s: %w", job, err)
	}
	obj.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("Job"))
	return obj, nil
}
