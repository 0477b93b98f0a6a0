package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// failMember sets member i of the labels job Failed on its node as mutate leaves it: by
// default a pod with no controller whose init container exited with 1.
func (j *labelsJob) failMember(i int, node string, mutate func(*corev1.Pod)) {
	p := gt.Pod(fmt.Sprintf("job-%d", i)).GPU(1).Node(node).Obj()
	p.UID = types.UID(fmt.Sprintf("%s-gen-%d", p.Name, j.generation))
	p.Status.Phase = corev1.PodFailed
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"},
	}}}
	if mutate != nil {
		mutate(p)
	}
	j.e.SetPod(p, labelsKey)
}

// bound admits the labels job and returns the nodes its members were bound to.
func (j *labelsJob) bound() []string {
	j.t.Helper()
	out := j.step(0)
	if len(out.Binds()) != 2 {
		j.t.Fatalf("expected 2 binds, found %+v", out.Binds())
	}
	nodes := make([]string, 2)
	for _, b := range out.Binds() {
		nodes[strings.TrimPrefix(b.Pod, "default/job-")[0]-'0'] = b.Node
	}
	j.step(time.Second)
	if st := j.status("bound"); st.Phase != lifecycle.Starting {
		j.t.Fatalf("bound: expected Starting, found %s", st.Phase)
	}
	return nodes
}

// TestMemberFailedToStartEndsTheAttempt: a member with no controller that fails while
// its group starts (restartPolicy Never) is never replaced, so the group cannot become
// Ready: the attempt ends at once, counted as failed, instead of holding the other
// member's GPU until the start timeout.
func TestMemberFailedToStartEndsTheAttempt(t *testing.T) {
	j := newLabelsJob(t)
	nodes := j.bound()
	j.failMember(1, nodes[1], nil)
	out := j.step(time.Second)
	if len(out.Evictions) != 2 || out.Evictions[0].Reason != lifecycle.ReasonMemberFailedToStart {
		t.Fatalf("expected both members evicted with reason %s, found %+v", lifecycle.ReasonMemberFailedToStart, out.Evictions)
	}
	st := j.status("after the failure")
	if st.Phase != lifecycle.Backoff || st.Failures != 1 || len(st.Attempts) != 1 {
		t.Fatalf("expected Backoff with 1 failed attempt, found %s with %d failures, attempts %+v", st.Phase, st.Failures, st.Attempts)
	}
	const want = "default/job-1: init container fetch exited with 1 (Error); 1 of 2 members placed in attempt 1 failed before the group was ready, leaving 1 of 2 required"
	if a := st.Attempts[0]; a.Stage != lifecycle.Starting || a.Message != want {
		t.Errorf("attempt 1: expected it to end in Starting with %q, found %s with %q", want, a.Stage, a.Message)
	}
}

// TestFailedMemberLeftToItsReplacement: failed members that something else deals with do
// not end the attempt: a pod with a controller (the controller creates a replacement,
// placed alone) and a pod the kubelet rejected at admission (placed again). The start
// timeout still bounds the attempt.
func TestFailedMemberLeftToItsReplacement(t *testing.T) {
	for name, mutate := range map[string]func(*corev1.Pod){
		"with a controller": func(p *corev1.Pod) {
			yes := true
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "job", UID: "job-uid", Controller: &yes}}
		},
		"rejected by the kubelet": func(p *corev1.Pod) {
			p.Status.Reason, p.Status.Message = "OutOfnvidia.com/gpu", "Node didn't have enough resource"
		},
	} {
		t.Run(name, func(t *testing.T) {
			j := newLabelsJob(t)
			nodes := j.bound()
			j.failMember(1, nodes[1], mutate)
			if out := j.step(time.Second); len(out.Evictions) != 0 {
				t.Fatalf("expected no eviction, found %+v", out.Evictions)
			}
			if st := j.status("after the failure"); st.Phase != lifecycle.Starting || st.Observed.PlacedFailed != 0 {
				t.Fatalf("expected Starting with no unreplaced failure, found %s with %+v", st.Phase, st.Observed)
			}
			if out := j.step(time.Minute); len(out.Evictions) == 0 || out.Evictions[0].Reason != lifecycle.ReasonStartTimeout {
				t.Fatalf("expected the start timeout to evict, found %+v", out.Evictions)
			}
		})
	}
}

// TestFailedPodOfAnEarlierAttemptIsNotCounted: a Failed pod left from an earlier
// attempt (a Job keeps its failed pods) was not placed in the current one and does not
// end it.
func TestFailedPodOfAnEarlierAttemptIsNotCounted(t *testing.T) {
	j := newLabelsJob(t)
	j.spec.MinMember = 1
	j.e.SetGroup(j.spec)
	nodes := j.bound()
	j.step(time.Minute) // start timeout: attempt 1 fails, both evicted
	j.step(time.Second)
	j.create()
	// An old pod, Failed and not placed by muster in the next attempt, joins the group.
	old := gt.Pod("job-old").GPU(1).Node(nodes[0]).Obj()
	old.UID = "job-old-gen-1"
	old.Status.Phase = corev1.PodFailed
	j.e.SetPod(old, labelsKey)
	out := j.step(15 * time.Second)
	if st := j.status("attempt 2"); st.Attempt != 2 || len(out.Binds()) == 0 {
		t.Fatalf("expected attempt 2 with binds, found attempt %d (%s), binds %+v", st.Attempt, st.Phase, out.Binds())
	}
	j.step(time.Second)
	if st := j.status("attempt 2 bound"); st.Phase != lifecycle.Starting || st.Observed.PlacedFailed != 0 || st.Observed.Placed != len(out.Binds()) {
		t.Fatalf("attempt 2: expected Starting with %d placed and none failed, found %s with %+v", len(out.Binds()), st.Phase, st.Observed)
	}
}

// TestOwnerFailedFailsTheGroup: a member whose Job replaces it fails; the engine waits
// for the replacement. Then the Job fails for good (its backoffLimit is spent): the group
// fails at once with the Job's reason, no retry follows, and nothing is evicted: the Job
// deletes its running pods and keeps the failed one, whose logs say why.
func TestOwnerFailedFailsTheGroup(t *testing.T) {
	j := newLabelsJob(t)
	nodes := j.bound()
	controller := true
	byJob := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "job", UID: "uid-job", Controller: &controller}}
	}
	j.failMember(1, nodes[1], byJob)
	if out := j.step(time.Second); len(out.Evictions) != 0 {
		t.Fatalf("while the Job may replace the member: expected no eviction, found %+v", out.Evictions)
	}
	const why = "Job default/job failed: BackoffLimitExceeded: Job has reached the specified backoff limit"
	j.spec.OwnerFailed = why
	j.e.SetGroup(j.spec)
	if out := j.step(time.Second); len(out.Evictions) != 0 {
		t.Fatalf("expected the members left to their Job, found evictions %+v", out.Evictions)
	}
	st := j.status("after the Job failed")
	if st.Phase != lifecycle.Failed || st.Reason != lifecycle.ReasonOwnerFailed || st.Message != why || st.Failures != 0 {
		t.Errorf("expected Failed with reason %s %q and no failed attempt, found %s %s %q with %d failures",
			lifecycle.ReasonOwnerFailed, why, st.Phase, st.Reason, st.Message, st.Failures)
	}
	if out := j.step(time.Hour); len(out.Binds()) != 0 {
		t.Errorf("expected no retry, found binds %+v", out.Binds())
	}
}
