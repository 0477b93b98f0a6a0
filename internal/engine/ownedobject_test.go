package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sim"
)

// leaderGroup drives, through the engine, a group as LeaderWorkerSet's Volcano provider
// makes one: a PodGroup owned by the group's leader pod, which the garbage collector
// deletes with that pod, and which LeaderWorkerSet creates again, under the same name,
// owned by the leader pod its StatefulSet creates again.
type leaderGroup struct{ *podsJob }

const leaderKey = "Volcano/default/lws-0-rev"

var leaderPods = []string{"lws-0", "lws-0-1"}

func newLeaderGroup(t *testing.T) *leaderGroup {
	maxRetries := 1
	l := &leaderGroup{&podsJob{t: t, e: oneGPUEngine(2), now: sim.Epoch, pods: leaderPods, spec: engine.GroupSpec{
		Key: leaderKey, Source: engine.Volcano, Namespace: "default", Name: "lws-0-rev", MinMember: 2,
		Policy: engine.PolicyOverrides{
			StartTimeout: ptr(int64(time.Minute)), MaxRetries: &maxRetries,
			BackoffBase: ptr(int64(10 * time.Second)), BackoffMax: ptr(int64(10 * time.Second)),
		},
	}}}
	// An eviction of the leader deletes the PodGroup with it, as the garbage collector does.
	l.gone = func(pod string) {
		if pod == leaderPods[0] {
			l.e.RemoveGroup(leaderKey)
		}
	}
	l.createPods()
	l.createObject()
	return l
}

// createObject creates the PodGroup (again), owned by the leader of this generation.
func (l *leaderGroup) createObject() {
	l.spec.ObjectOwner = l.uid(leaderPods[0])
	l.e.SetGroup(l.spec)
}

// timeOut runs an attempt to its start timeout and checks that both pods are evicted.
func (l *leaderGroup) timeOut(attempt int) {
	l.t.Helper()
	l.step(time.Second)
	if out := l.step(time.Minute); len(out.Evictions) != 2 {
		l.t.Fatalf("attempt %d's start timeout: expected 2 evictions, found %+v", attempt, out.Evictions)
	}
	l.step(time.Second)
}

// TestGroupKeepsItsAttemptsWhenItsObjectGoesWithItsLeader: a group whose object is
// owned by its leader pod (LeaderWorkerSet's Volcano PodGroup) loses the object whenever
// muster evicts the group, and its owner creates pods and object again. The group keeps
// its attempts meanwhile, waits out of the queue for the object, and fails after
// max-retries; pods and object created after that join the failed group. (The group
// used to be cancelled with its object, and the object created again started it at
// attempt 1: a group that never became Ready never failed.)
func TestGroupKeepsItsAttemptsWhenItsObjectGoesWithItsLeader(t *testing.T) {
	l := newLeaderGroup(t)
	if out := l.step(0); len(out.Binds()) != 2 {
		t.Fatalf("attempt 1: expected 2 binds, found %+v", out.Binds())
	}
	l.timeOut(1)
	if st := l.status("after the first eviction"); st.Phase != lifecycle.Backoff || st.Failures != 1 {
		t.Fatalf("after the first eviction: expected Backoff with 1 failure, found %s with %d", st.Phase, st.Failures)
	}

	// The StatefulSets create the pods again before LeaderWorkerSet creates the object:
	// past the backoff they wait for it, and are not bound.
	l.createPods()
	if out := l.step(15 * time.Second); len(out.Binds()) != 0 {
		t.Fatalf("pods bound while the group's object was gone: %+v", out.Binds())
	}
	st := l.status("without its object")
	if st.Attempt != 1 || !strings.Contains(st.Waiting, "until an object of the same name is created again") {
		t.Fatalf("without its object: expected attempt 1, waiting for its object, found attempt %d (%s): %q", st.Attempt, st.Phase, st.Waiting)
	}
	l.createObject()
	out := l.step(time.Second)
	if st := l.status("with its object again"); st.Attempt != 2 || len(out.Binds()) != 2 {
		t.Fatalf("with its object again: expected attempt 2 with 2 binds, found attempt %d (%s), binds %+v", st.Attempt, st.Phase, out.Binds())
	}
	l.timeOut(2)
	if st := l.status("after the last attempt"); st.Phase != lifecycle.Failed || st.Failures != 2 {
		t.Fatalf("after the last attempt: expected Failed with 2 failures, found %s with %d", st.Phase, st.Failures)
	}

	l.createPods()
	l.createObject()
	if out := l.step(time.Minute); len(out.Binds()) != 0 {
		t.Fatalf("pods of a failed group were bound: %+v", out.Binds())
	}
	if st := l.status("pods and object created after the failure"); st.Phase != lifecycle.Failed || st.Observed.Members != 2 {
		t.Fatalf("pods and object created after the failure: expected Failed with 2 members, found %s with %d", st.Phase, st.Observed.Members)
	}
}

// TestGroupObjectGoneForGoodEndsTheGroup: an object that went with the leader muster
// evicted and does not come back within the retention leaves nothing behind: the group
// is cancelled then, and an object of the same name created later starts it anew.
func TestGroupObjectGoneForGoodEndsTheGroup(t *testing.T) {
	l := newLeaderGroup(t)
	l.step(0)
	l.timeOut(1)
	out := l.step(0)
	if out.WakeAt.IsZero() || out.WakeAt.After(l.now.Add(10*time.Minute)) {
		t.Fatalf("expected a wake at the retention's end at the latest, found %s (now %s)", out.WakeAt, l.now)
	}
	l.step(10 * time.Minute)
	if _, ok := l.e.Group(leaderKey); ok {
		t.Fatalf("expected the group forgotten once its retention ended")
	}
	l.createPods()
	l.createObject()
	if out := l.step(time.Second); len(out.Binds()) != 2 {
		t.Fatalf("a new object after the retention: expected its group admitted at once, found binds %+v", out.Binds())
	}
	if st := l.status("a new object after the retention"); st.Attempt != 1 || st.Failures != 0 {
		t.Fatalf("a new object after the retention: expected attempt 1 with no failure, found attempt %d with %d", st.Attempt, st.Failures)
	}
}

// TestGroupObjectNotOwnedByAnEvictedMember: an object deleted otherwise (by its user,
// or with a leader muster did not evict) cancels its group, as before: an object of the
// same name starts a group anew.
func TestGroupObjectNotOwnedByAnEvictedMember(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(l *leaderGroup)
	}{
		{"deleted while the group runs", func(l *leaderGroup) { l.step(0) }},
		{"owned by a pod that is not a member", func(l *leaderGroup) {
			l.spec.ObjectOwner = "some-other-pod"
			l.e.SetGroup(l.spec)
			l.step(0)
			l.timeOut(1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLeaderGroup(t)
			tc.prepare(l)
			for _, name := range leaderPods {
				l.e.RemovePod("default/" + name)
			}
			l.e.RemoveGroup(leaderKey)
			l.step(time.Second)
			if st, ok := l.e.Group(leaderKey); ok {
				t.Fatalf("expected the group cancelled and forgotten with its object, found it %s", st.Phase)
			}
		})
	}
}

// TestGroupObjectCreatedAgainIsANewGroup: an object deleted while its pods are still
// being deleted, and created again with new pods (a RayCluster deleted and applied
// again: its pods have new names), is a new group: the new pods are admitted at attempt
// 1, whether the new object comes after the engine cancelled the old group or before.
// Only the old pods are evicted. (The new pods used to join the cancelled group, and
// waited in it as long as they existed; or, when the object came back before the
// cancel, were evicted with the old ones.)
func TestGroupObjectCreatedAgainIsANewGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cancelFirst steps the engine between the deletion and the new object.
		cancelFirst bool
	}{{"after the cancel", true}, {"before the cancel", false}} {
		t.Run(tc.name, func(t *testing.T) {
			const key = "Coscheduling/default/ray"
			j := &podsJob{t: t, e: oneGPUEngine(4), now: sim.Epoch, pods: []string{"old-a", "old-b"},
				spec: engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "ray", MinMember: 2}}
			j.createPods()
			j.e.SetGroup(j.spec)
			j.step(0)

			j.e.RemoveGroup(key)
			var evicted []string
			if tc.cancelFirst {
				j.now = j.now.Add(time.Second)
				for _, ev := range j.e.Step(j.now).Evictions { // the pods stay, being deleted
					evicted = append(evicted, ev.Pod)
				}
			}
			j.e.SetGroup(j.spec)
			j.pods = []string{"new-a", "new-b"}
			j.createPods()
			j.now = j.now.Add(time.Second)
			out := j.e.Step(j.now)
			for _, ev := range out.Evictions {
				evicted = append(evicted, ev.Pod)
			}
			if want := []string{"default/old-a", "default/old-b"}; !slices.Equal(evicted, want) {
				t.Fatalf("expected the old pods evicted, and only them: %v, found %v", want, evicted)
			}
			var bound []string
			for _, b := range out.Binds() {
				bound = append(bound, b.Pod)
			}
			if want := []string{"default/new-a", "default/new-b"}; !slices.Equal(bound, want) {
				t.Fatalf("the object created again: expected %v bound, found %v", want, bound)
			}
			if st := j.status("the object created again"); st.Attempt != 1 || st.Phase != lifecycle.Binding {
				t.Fatalf("the object created again: expected a new group Binding at attempt 1, found %s at attempt %d", st.Phase, st.Attempt)
			}
		})
	}
}

// TestInvalidGroupObjectCreatedAgainIsAdmitted: an object whose group never started (its
// minMember was invalid) deleted and created again, fixed, while its pods stay, is
// admitted.
func TestInvalidGroupObjectCreatedAgainIsAdmitted(t *testing.T) {
	const key = "Coscheduling/default/fixed"
	j := &podsJob{t: t, e: oneGPUEngine(2), now: sim.Epoch, pods: []string{"fixed-0", "fixed-1"},
		spec: engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "fixed", MinMember: 3}}
	j.createPods()
	j.spec.Invalid = []string{"spec.minMember: 3: more than the 2 member pods"}
	j.e.SetGroup(j.spec)
	if out := j.step(0); len(out.Binds()) != 0 {
		t.Fatalf("an invalid group: expected no binds, found %+v", out.Binds())
	}
	j.e.RemoveGroup(key)
	j.step(time.Second)
	j.spec.MinMember, j.spec.Invalid = 2, nil
	j.e.SetGroup(j.spec)
	if out := j.step(time.Second); len(out.Binds()) != 2 {
		st, _ := j.e.Group(key)
		t.Fatalf("the object created again, fixed: expected 2 binds, found %+v (group %s: %q)", out.Binds(), st.Phase, st.Invalid)
	}
}
