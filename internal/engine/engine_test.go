package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sim"
)

// TestInvalidGroups: a group whose definition is wrong gets one Warning event naming the
// field and value, and none of its pods is bound.
func TestInvalidGroups(t *testing.T) {
	tests := []struct {
		name string
		spec engine.GroupSpec
		want string
	}{
		{"minMember zero", engine.GroupSpec{MinMember: 0}, "spec.minMember: 0"},
		{"source problem", engine.GroupSpec{MinMember: 1, Invalid: []string{`spec.queue: "a b": not a valid queue name`}}, `spec.queue: "a b"`},
		{"bad policy", engine.GroupSpec{MinMember: 1, Policy: engine.PolicyOverrides{StartTimeout: ptr(int64(-1))}}, "StartTimeout must be greater than 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine()
			e.SetNode(gt.Node("n-0").GPU(1).Obj())
			tc.spec.Key, tc.spec.Source = "Coscheduling/default/g", engine.Coscheduling
			e.SetGroup(tc.spec)
			e.SetPod(gt.Pod("g-0").GPU(1).Obj(), tc.spec.Key)
			out := e.Step(sim.Epoch)
			if len(out.Binds()) != 0 {
				t.Fatalf("invalid group was bound: %+v", out.Binds())
			}
			if len(out.Events) != 1 || out.Events[0].Reason != "InvalidGroup" || out.Events[0].Type != engine.Warning {
				t.Fatalf("events = %+v, want one Warning InvalidGroup", out.Events)
			}
			if !strings.Contains(out.Events[0].Message, tc.want) {
				t.Fatalf("message %q does not name %q", out.Events[0].Message, tc.want)
			}
			if again := e.Step(sim.Epoch); len(again.Events) != 0 {
				t.Fatalf("the problem was reported twice: %+v", again.Events)
			}
			st, _ := e.Group(tc.spec.Key)
			if st.Invalid == "" || st.Phase != "" {
				t.Fatalf("status = phase %q invalid %q, want no phase and the problem", st.Phase, st.Invalid)
			}
		})
	}
}

func ptr(ns int64) *time.Duration { d := time.Duration(ns); return &d }

// TestBindFailed: a failed bind frees the node and the member is placed again.
func TestBindFailed(t *testing.T) {
	e := sim.NewEngine()
	e.SetNode(gt.Node("n-0").GPU(1).Obj())
	key := "Single/default/p"
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Single, MinMember: 1})
	e.SetPod(gt.Pod("p").GPU(1).Obj(), key)
	out := e.Step(sim.Epoch)
	want := []engine.Bind{{Group: key, Pod: "default/p", Node: "n-0"}}
	if d := cmp.Diff(want, out.Binds()); d != "" {
		t.Fatalf("binds (-want +got):\n%s", d)
	}
	e.BindFailed("default/p")
	if free := e.Snapshot().Node("n-0").Free(gt.GPU); free != 1 {
		t.Fatalf("after a failed bind n-0 has %d GPU free, want 1", free)
	}
	out = e.Step(sim.Epoch)
	if d := cmp.Diff(want, out.Binds()); d != "" {
		t.Fatalf("after the failed bind, binds (-want +got):\n%s", d)
	}
	st, _ := e.Group(key)
	if st.Phase != lifecycle.Binding || st.Attempt != 1 {
		t.Fatalf("phase %s attempt %d, want Binding in attempt 1: a failed bind is not a failed attempt", st.Phase, st.Attempt)
	}
}

// TestAdoptBoundGroup: a restarted muster finds a group whose members are bound and Ready;
// it takes the group over as Running without binding anything again.
func TestAdoptBoundGroup(t *testing.T) {
	e := oneGPUEngine(2)
	key := "Coscheduling/default/g"
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "g", MinMember: 2})
	for i, node := range []string{"n-0", "n-1"} {
		p := gt.Pod("g-" + string(rune('0'+i))).GPU(1).Node(node).Obj()
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		e.SetPod(p, key)
	}
	out := e.Step(sim.Epoch)
	if len(out.Binds()) != 0 || len(out.Evictions) != 0 {
		t.Fatalf("adoption bound or evicted: %+v %+v", out.Binds(), out.Evictions)
	}
	st, _ := e.Group(key)
	if st.Phase != lifecycle.Running {
		t.Fatalf("phase %s, want Running", st.Phase)
	}
	if free := e.Snapshot().Node("n-0").Free(gt.GPU); free != 0 {
		t.Fatalf("n-0 has %d GPU free; the adopted member should hold it", free)
	}
}

// TestStaleUnboundVersionKeepsTheBind: a member seen again unbound while its bind is in
// flight (the informer lags, or the pod was patched before the bind) keeps its node, so
// a second group is not placed on it.
func TestStaleUnboundVersionKeepsTheBind(t *testing.T) {
	e := sim.NewEngine()
	e.SetNode(gt.Node("n-0").GPU(1).Obj())
	first, second := "Single/default/a", "Single/default/b"
	e.SetGroup(engine.GroupSpec{Key: first, Source: engine.Single, MinMember: 1})
	a := gt.Pod("a").GPU(1).Obj()
	e.SetPod(a, first)
	if out := e.Step(sim.Epoch); len(out.Binds()) != 1 {
		t.Fatalf("binds %+v, want a bound to n-0", out.Binds())
	}
	e.SetPod(a, first) // the same, unbound, version again
	e.SetGroup(engine.GroupSpec{Key: second, Source: engine.Single, MinMember: 1})
	e.SetPod(gt.Pod("b").GPU(1).Obj(), second)
	if out := e.Step(sim.Epoch); len(out.Binds()) != 0 {
		t.Fatalf("binds %+v: b was placed on the GPU a's bind holds", out.Binds())
	}
	if free := e.Snapshot().Node("n-0").Free(gt.GPU); free != 0 {
		t.Fatalf("n-0 has %d GPU free, want 0 while a's bind is in flight", free)
	}
}

// TestResizedMemberCountsAnew: a member whose spec changed (a new generation, as an
// in-place resize makes) counts on its node with its new requests; a status write that
// leaves the generation alone keeps them.
func TestResizedMemberCountsAnew(t *testing.T) {
	e := sim.NewEngine()
	e.SetNode(gt.Node("n-0").GPU(4).Obj())
	key := "Single/default/p"
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Single, MinMember: 1})
	p := gt.Pod("p").GPU(1).Node("n-0").Obj()
	p.UID, p.Generation = "uid-p", 1
	e.SetPod(p, key)
	e.Step(sim.Epoch)
	free := func() int64 { return e.Snapshot().Node("n-0").Free(gt.GPU) }
	if got := free(); got != 3 {
		t.Fatalf("n-0: expected 3 GPUs free, found %d", got)
	}
	running := p.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	e.SetPod(running, key)
	if got := free(); got != 3 {
		t.Fatalf("after a status write: expected 3 GPUs free, found %d", got)
	}
	resized := gt.Pod("p").GPU(2).Node("n-0").Obj()
	resized.UID, resized.Generation = "uid-p", 2
	e.SetPod(resized, key)
	if got := free(); got != 2 {
		t.Fatalf("after a resize to 2 GPUs: expected 2 GPUs free, found %d", got)
	}
}
