package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sim"
)

// labelsJob drives a Labels group of two one-GPU pods through the engine as the
// controller would, with an owner that creates the pods again after muster evicts them.
type labelsJob struct{ *podsJob }

const labelsKey = "Labels/default/job"

func newLabelsJob(t *testing.T) *labelsJob {
	maxRetries := 1
	j := &labelsJob{&podsJob{t: t, e: oneGPUEngine(2), now: sim.Epoch, pods: []string{"job-0", "job-1"}, spec: engine.GroupSpec{
		Key: labelsKey, Source: engine.Labels, Namespace: "default", Name: "job", MinMember: 2,
		Policy: engine.PolicyOverrides{
			StartTimeout: ptr(int64(time.Minute)), MaxRetries: &maxRetries,
			BackoffBase: ptr(int64(10 * time.Second)), BackoffMax: ptr(int64(10 * time.Second)),
		},
	}}}
	j.create()
	return j
}

// create creates the job's pods (again), unbound.
func (j *labelsJob) create() {
	j.createPods()
	j.e.SetGroup(j.spec)
}

// TestLabelsGroupKeepsItsAttemptsWhileItsPodsAreRecreated: a group with no object is its
// pods. When muster evicts them at the start timeout, the group keeps its attempts while
// their owner creates them again, so a job that never starts fails after max-retries, as
// an object group does, and pods created again after that join the failed group instead
// of starting it over. (The group used to be cancelled when its last pod went, and the
// pods created again started it at attempt 1: such a job never failed.)
func TestLabelsGroupKeepsItsAttemptsWhileItsPodsAreRecreated(t *testing.T) {
	j := newLabelsJob(t)
	if out := j.step(0); len(out.Binds()) != 2 {
		t.Fatalf("attempt 1: expected 2 binds, found %+v", out.Binds())
	}
	j.step(time.Second)
	if out := j.step(time.Minute); len(out.Evictions) != 2 {
		t.Fatalf("start timeout: expected 2 evictions, found %+v", out.Evictions)
	}
	j.step(time.Second) // the pods are gone
	if st := j.status("after the first eviction"); st.Phase != lifecycle.Backoff || st.Failures != 1 {
		t.Fatalf("after the first eviction: expected Backoff with 1 failure, found %s with %d", st.Phase, st.Failures)
	}

	j.create() // the owner creates the pods again
	out := j.step(15 * time.Second)
	if st := j.status("after the backoff"); st.Attempt != 2 || len(out.Binds()) != 2 {
		t.Fatalf("after the backoff: expected attempt 2 with 2 binds, found attempt %d (%s), binds %+v", st.Attempt, st.Phase, out.Binds())
	}
	j.step(time.Second)
	if out := j.step(time.Minute); len(out.Evictions) != 2 {
		t.Fatalf("second start timeout: expected 2 evictions, found %+v", out.Evictions)
	}
	j.step(time.Second)
	if st := j.status("after the last attempt"); st.Phase != lifecycle.Failed || st.Failures != 2 {
		t.Fatalf("after the last attempt: expected Failed with 2 failures, found %s with %d", st.Phase, st.Failures)
	}

	j.create() // the owner creates them once more: they join the failed group
	if out := j.step(time.Minute); len(out.Binds()) != 0 {
		t.Fatalf("pods of a failed group were bound: %+v", out.Binds())
	}
	if st := j.status("pods created after the failure"); st.Phase != lifecycle.Failed || st.Observed.Members != 2 {
		t.Fatalf("pods created after the failure: expected Failed with 2 members, found %s with %d", st.Phase, st.Observed.Members)
	}
}

// TestLabelsGroupRetentionEnds: pods that do not come back within the retention leave
// nothing behind: the group is cancelled once the retention ends, and
// pods of the same group created later start it anew.
func TestLabelsGroupRetentionEnds(t *testing.T) {
	j := newLabelsJob(t)
	j.step(0)
	j.step(time.Second)
	j.step(time.Minute)
	j.step(time.Second)
	if st := j.status("after the eviction"); st.Phase != lifecycle.Backoff {
		t.Fatalf("after the eviction: expected Backoff, found %s", st.Phase)
	}
	out := j.step(0)
	wake := out.WakeAt
	if wake.IsZero() || wake.After(j.now.Add(10*time.Minute)) {
		t.Fatalf("expected a wake-up within the retention, found %v (now %v)", wake, j.now)
	}
	for range 12 {
		j.step(time.Minute)
	}
	if st, ok := j.e.Group(labelsKey); ok {
		t.Fatalf("12 minutes without pods: expected the group gone, found %s (attempt %d)", st.Phase, st.Attempt)
	}
	j.create()
	if out := j.step(time.Second); len(out.Binds()) != 2 {
		t.Fatalf("a new group of the same name: expected 2 binds, found %+v", out.Binds())
	}
	if st := j.status("the new group"); st.Attempt != 1 || st.Failures != 0 {
		t.Fatalf("the new group: expected attempt 1 and no failure, found attempt %d, %d failures", st.Attempt, st.Failures)
	}
}

// TestLabelsGroupDeletedIsCancelledAtOnce: pods deleted by their owner, not evicted by
// muster, cancel their group at once, as before.
func TestLabelsGroupDeletedIsCancelledAtOnce(t *testing.T) {
	j := newLabelsJob(t)
	j.step(0)
	j.step(time.Second)
	for i := range 2 {
		j.e.RemovePod(fmt.Sprintf("default/job-%d", i))
	}
	out := j.step(time.Second)
	if st, ok := j.e.Group(labelsKey); ok {
		t.Fatalf("expected the group gone once its pods were deleted, found %s", st.Phase)
	}
	if diff := cmp.Diff([]string{labelsKey}, out.Dropped); diff != "" {
		t.Errorf("expected the Step that forgot the group to say so in Dropped (-want +got):\n%s", diff)
	}
	if out := j.step(time.Second); len(out.Dropped) != 0 {
		t.Errorf("expected a group dropped once, found it again in %v", out.Dropped)
	}
}

// TestLabelsGroupHandedOffLeavesWithItsPods: a group whose owner keeps its state (muster
// suspended the Job and recorded the group on it) is not retained once its evicted pods
// are gone: it leaves the engine without a cancel, and pods that come back with the
// owner's record resume its attempts.
func TestLabelsGroupHandedOffLeavesWithItsPods(t *testing.T) {
	j := newLabelsJob(t)
	j.step(0)
	j.step(time.Second)
	j.now = j.now.Add(time.Minute)
	evicted := j.e.Step(j.now).Evictions // the pods are still there, terminating
	if len(evicted) != 2 {
		t.Fatalf("start timeout: expected 2 evictions, found %+v", evicted)
	}
	st := j.status("after the eviction")
	j.e.HandOff(labelsKey)
	if _, ok := j.e.Group(labelsKey); !ok {
		t.Fatalf("expected the handed-off group kept while its pods are there")
	}
	for _, ev := range evicted {
		j.e.RemovePod(ev.Pod)
	}
	out := j.step(time.Second) // the pods are gone
	if got, ok := j.e.Group(labelsKey); ok {
		t.Fatalf("expected the handed-off group gone with its pods, found %s", got.Phase)
	}
	if diff := cmp.Diff([]string{labelsKey}, out.Dropped); diff != "" {
		t.Errorf("expected the handed-off group in Dropped (-want +got):\n%s", diff)
	}
	for _, ev := range out.Events {
		if ev.Reason == lifecycle.ReasonCancelled {
			t.Errorf("expected no cancel of a handed-off group, found event %+v", ev)
		}
	}

	past := engine.PastOf(engine.RecordOf(st)) // as the controller reads it back from the Job
	j.spec.Past = &past
	j.create()
	j.step(15 * time.Second)
	if st := j.status("pods back with the record"); st.Attempt != 2 || st.Failures != 1 {
		t.Fatalf("pods back with the record: expected attempt 2 after 1 failure, found attempt %d (%s), %d failures", st.Attempt, st.Phase, st.Failures)
	}
}

// TestLabelsGroupHandedOffWithoutPodsLeavesAtOnce: a group handed off after its pods
// were moved out of it leaves the engine at once, so that pods of a new owner that come
// before the next Step start a group of their own rather than joining the old one.
func TestLabelsGroupHandedOffWithoutPodsLeavesAtOnce(t *testing.T) {
	j := newLabelsJob(t)
	j.step(0)
	j.step(time.Second)
	out := j.step(time.Minute)
	for _, ev := range out.Evictions {
		j.e.RemovePod(ev.Pod) // the caller moved them out (they count on their nodes only)
	}
	j.e.HandOff(labelsKey)
	if got, ok := j.e.Group(labelsKey); ok {
		t.Fatalf("expected the group gone at once, found %s", got.Phase)
	}
	j.create() // a new Job's pods, before any Step
	if out := j.step(time.Second); len(out.Binds()) != 2 {
		t.Fatalf("the new group: expected 2 binds, found %+v", out.Binds())
	}
	if st := j.status("the new group"); st.Attempt != 1 || st.Failures != 0 {
		t.Fatalf("the new group: expected attempt 1 and no failure, found attempt %d, %d failures", st.Attempt, st.Failures)
	}
}
