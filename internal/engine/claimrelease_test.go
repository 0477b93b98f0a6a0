package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sim"
)

// TestClaimReleaseAskedAgain: a native PodGroup's own claim is released when the group is
// evicted; while the claim stays reserved for the PodGroup (the shell's release failed),
// the engine asks again after 10 s, then 20 s later, and stops once the claim is seen
// released. Once the group is placed again (after the shell reported its last ask
// failed: ClaimReleaseFailed) it never asks: the claim then belongs to the new attempt.
func TestClaimReleaseAskedAgain(t *testing.T) {
	for _, placedAgain := range []bool{false, true} {
		t.Run(fmt.Sprintf("placed again %v", placedAgain), func(t *testing.T) {
			c := evictedClaimGang(t)
			e, key, consumer, allocated, pod, members, now := c.e, c.key, c.consumer, c.allocated, c.pod, c.members, c.now
			released := func(at time.Duration) int {
				return len(e.Step(now.Add(at)).ClaimReleases)
			}
			if placedAgain {
				for _, name := range members {
					e.SetPod(pod(name+"-again"), key)
				}
				// The release is asked again 10 s later; the next Step is after the group's
				// backoff (30 s) and the next ask (30 s) are both due: the group is placed
				// again on the claim's devices, and no release goes with the plan (the
				// shell would release the claim the plan's binds count on).
				if n := released(10 * time.Second); n != 1 {
					t.Fatalf("10 s after the release, the claim still reserved: %d claim releases, want 1", n)
				}
				e.ClaimReleaseFailed(key)
				now = now.Add(5 * time.Minute)
				out := e.Step(now)
				if len(out.Plans) != 1 || len(out.ClaimReleases) != 0 {
					t.Fatalf("5 min after the eviction: plans %+v, claim releases %+v; want the group placed again and no release", out.Plans, out.ClaimReleases)
				}
				if got := e.Snapshot().ResourceClaim("default/channel").Status.ReservedFor; len(got) != 1 || got[0] != consumer {
					t.Fatalf("placed again, the claim is reserved for %+v", got)
				}
				for _, st := range out.Plans[0].Steps {
					running := pod(st.Pod[len("default/"):])
					running.Spec.NodeName = st.Node
					running.Status.Phase = corev1.PodRunning
					running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
					e.SetPod(running, key)
				}
				for at := time.Duration(0); at <= 6*time.Minute; at += 10 * time.Second {
					if n := released(at); n != 0 {
						t.Fatalf("%v after the group was placed again: %d claim releases, want none", at, n)
					}
				}
				if st, _ := e.Group(key); st.Phase != lifecycle.Running {
					t.Fatalf("placed again, the group is %s, want Running", st.Phase)
				}
				return
			}
			if n := released(9 * time.Second); n != 0 {
				t.Fatalf("9 s after the release: %d claim releases, want none yet", n)
			}
			if n := released(10 * time.Second); n != 1 {
				t.Fatalf("10 s after the release, the claim still reserved: %d claim releases, want 1", n)
			}
			if n := released(29 * time.Second); n != 0 {
				t.Fatalf("29 s after: %d claim releases, want none (the next is 20 s after the second)", n)
			}
			if n := released(30 * time.Second); n != 1 {
				t.Fatalf("30 s after: %d claim releases, want 1", n)
			}
			free := allocated.DeepCopy()
			free.Status = resourcev1.ResourceClaimStatus{}
			e.SetObject(free)
			if n := released(31 * time.Second); n != 0 {
				t.Fatalf("the claim seen released: %d claim releases, want none", n)
			}
			if n := released(2 * time.Hour); n != 0 {
				t.Fatalf("two hours later: %d claim releases, want none", n)
			}
		})
	}
}

// TestClaimReleaseInFlightHoldsThePlacement: a native PodGroup evicted at its start
// timeout has its new pods, and its backoff ends, while the release of its own claim is
// in flight (the snapshot still shows the claim reserved for the PodGroup, and the shell
// has reported no failure). The engine does not place it on the claim as the snapshot shows it: a
// release landing after the binds would undo the allocation they count on. Its status
// says why it waits. Once the claim is seen released, the next Step places the group,
// on a fresh allocation. Reported failed instead, the release is not in flight, and the
// group is placed on the claim as it is.
func TestClaimReleaseInFlightHoldsThePlacement(t *testing.T) {
	for _, failed := range []bool{false, true} {
		t.Run(fmt.Sprintf("reported failed %v", failed), func(t *testing.T) {
			c := evictedClaimGang(t)
			e, key, consumer, allocated, pod, now := c.e, c.key, c.consumer, c.allocated, c.pod, c.now
			for _, name := range c.members {
				e.SetPod(pod(name+"-again"), key)
			}
			if failed {
				e.ClaimReleaseFailed(key)
			}
			now = now.Add(time.Minute) // past the backoff (30 s); the release is asked again too
			out := e.Step(now)
			if failed {
				if len(out.Plans) != 1 {
					t.Fatalf("the release reported failed: plans %+v, want the group placed on the claim as it is", out.Plans)
				}
				return
			}
			if len(out.Plans) != 0 {
				t.Fatalf("the release in flight: plans %+v, want none", out.Plans)
			}
			if st, _ := e.Group(key); !strings.Contains(st.Waiting, "its own ResourceClaims are being released from its last attempt (default/channel)") {
				t.Fatalf("the release in flight: the group says %q", st.Waiting)
			}
			free := allocated.DeepCopy()
			free.Status = resourcev1.ResourceClaimStatus{}
			e.SetObject(free)
			out = e.Step(now.Add(time.Second))
			if len(out.Plans) != 1 || len(out.ClaimReleases) != 0 {
				t.Fatalf("the claim seen released: plans %+v, claim releases %+v; want the group placed and no release", out.Plans, out.ClaimReleases)
			}
			if got := e.Snapshot().ResourceClaim("default/channel").Status.ReservedFor; len(got) != 1 || got[0] != consumer {
				t.Fatalf("placed again, the claim is reserved for %+v", got)
			}
		})
	}
}

// claimGang is a native PodGroup whose members share the PodGroup's own claim, evicted:
// see evictedClaimGang.
type claimGang struct {
	e         *engine.Engine
	key       string
	consumer  resourcev1.ResourceClaimConsumerReference
	allocated *resourcev1.ResourceClaim
	pod       func(name string) *corev1.Pod
	members   []string
	now       time.Time
}

// evictedClaimGang runs native PodGroup vit, whose two members share the PodGroup's own
// claim "channel", and steps to its start timeout (2 h later), whose eviction asks for
// the claim's release; the members are then removed. allocated is the claim as the
// binder wrote it, still reserved for the PodGroup.
func evictedClaimGang(t *testing.T) claimGang {
	t.Helper()
	e := draEngine()
	channel := "channel"
	e.SetObject(gt.GPUClaim("default", channel, 1))
	c := claimGang{e: e, key: "Native/default/vit", members: []string{"vit-0", "vit-1"},
		consumer: resourcev1.ResourceClaimConsumerReference{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "vit", UID: "uid-vit"}}
	e.SetGroup(engine.GroupSpec{Key: c.key, Source: engine.Native, Namespace: "default", Name: "vit", MinMember: 2,
		GroupClaims:   []schedulingv1beta1.PodGroupResourceClaim{{Name: channel, ResourceClaimName: &channel}},
		ClaimConsumer: &c.consumer})
	c.pod = func(name string) *corev1.Pod {
		return gt.Pod(name).UID("uid-"+name).DeviceClaim(channel, channel).Obj()
	}
	for _, name := range c.members {
		e.SetPod(c.pod(name), c.key)
	}
	c.now = sim.Epoch
	out := e.Step(c.now)
	if len(out.Plans) != 1 {
		t.Fatalf("plans %+v", out.Plans)
	}
	// The API server's claim, as the binder wrote it, comes back to the engine.
	c.allocated = e.Snapshot().ResourceClaim("default/channel").DeepCopy()
	e.SetObject(c.allocated)
	for _, st := range out.Plans[0].Steps {
		running := c.pod(st.Pod[len("default/"):])
		running.Spec.NodeName = st.Node
		e.SetPod(running, c.key)
	}
	e.Step(c.now.Add(time.Second))
	c.now = c.now.Add(2 * time.Hour)
	out = e.Step(c.now)
	if len(out.Evictions) != 2 || len(out.ClaimReleases) != 1 || out.ClaimReleases[0].Consumer != c.consumer {
		t.Fatalf("at the start timeout: evictions %+v, claim releases %+v", out.Evictions, out.ClaimReleases)
	}
	for _, name := range c.members {
		e.RemovePod("default/" + name)
	}
	return c
}
