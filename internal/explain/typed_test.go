package explain_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
	"github.com/muster-sched/muster/internal/sim"
)

// scene is an engine driven into one kind of wait: the group explained is key.
type scene struct {
	e   *engine.Engine
	now time.Time
}

func newScene(gpuNodes int) *scene {
	s := &scene{e: sim.NewEngine(), now: sim.Epoch}
	for _, n := range gt.Nodes("n", gpuNodes, func(b *gt.NodeBuilder) *gt.NodeBuilder { return b.GPU(1) }) {
		s.e.SetNode(n)
	}
	return s
}

// cohort adds queues team-a and team-b of two GPUs each, in cohort research.
func (s *scene) cohort() *scene {
	for _, q := range []string{"team-a", "team-b"} {
		s.e.SetQueue(engine.Queue{Queue: queue.Queue{Name: q, Quota: cluster.Resources{gt.GPU: 2}, Cohort: "research"}})
	}
	return s
}

// submit adds group name in queue q (namespace default), of members one-GPU pods, and
// steps the engine a second later.
func (s *scene) submit(name, q string, members int, prio int32) string {
	key := "Coscheduling/default/" + name
	s.e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name,
		MinMember: members, Priority: prio, Queue: q})
	for i := range members {
		s.e.SetPod(gt.Pod(name+"-"+string(rune('0'+i))).GPU(1).Obj(), key)
	}
	s.step()
	return key
}

// run submits a group of one member and marks it Running on the node it was bound to.
func (s *scene) run(t *testing.T, name, q string, prio int32) string {
	t.Helper()
	key := "Coscheduling/default/" + name
	s.e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: name, MinMember: 1, Priority: prio, Queue: q})
	s.e.SetPod(gt.Pod(name+"-0").GPU(1).Obj(), key)
	out := s.step()
	binds := out.Binds()
	if len(binds) != 1 {
		t.Fatalf("%s: expected one bind, found %+v", name, binds)
	}
	p := gt.Pod(name + "-0").GPU(1).Node(binds[0].Node).Obj()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	s.e.SetPod(p, key)
	s.step()
	return key
}

func (s *scene) step() engine.Output {
	s.now = s.now.Add(time.Second)
	return s.e.Step(s.now)
}

// waitCase is an engine driven into one kind of wait, and what explain must make of
// the group's record.
type waitCase struct {
	name  string
	build func(t *testing.T) (*scene, string)
	check func(t *testing.T, w *musterv1alpha1.WaitReason)
	// fix is in the verdict of the typed record, old in that of the record without it
	// (empty: the same as fix).
	fix, old string
	// evidence is in the typed report.
	evidence []string
}

var waitCases = []waitCase{{
	name: "quota reclaimable",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(4).cohort()
		for _, n := range []string{"a1", "a2", "a3", "a4"} {
			s.run(t, n, "team-a", 5)
		}
		return s, s.submit("b1", "team-b", 1, 0)
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		if w.Kind != musterv1alpha1.WaitQuotaExceeded || w.Quota == nil || !w.Quota.Reclaimable || w.Quota.Cohort != "research" ||
			!w.Reclaiming || len(w.Preempting) != 1 {
			t.Errorf("expected a reclaimable QuotaExceeded of cohort research reclaiming from one group, found %+v %+v", w, w.Quota)
		}
	},
	fix: "nothing to do: the group is within its queue's quota and muster takes back what cohort research lent",
	old: "wait: for queue team-b's running groups to finish, or for what it lent to cohort research to be reclaimed",
}, {
	name: "cohort short",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(4).cohort()
		s.run(t, "a1", "team-a", 0)
		s.run(t, "a2", "team-a", 0)
		s.run(t, "b1", "team-b", 0)
		s.run(t, "b2", "team-b", 0)
		return s, s.submit("a3", "team-a", 1, 0)
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		if w.Kind != musterv1alpha1.WaitQuotaExceeded || w.Quota == nil || w.Quota.Reclaimable || w.Quota.Cohort != "research" ||
			w.Quota.CohortUsed == nil || w.Quota.CohortUsed.Value() != 4 || w.Quota.Used.Value() != 2 || w.Quota.Need.Value() != 1 {
			t.Errorf("expected QuotaExceeded in cohort research, 2 of 2 used in the queue, 4 in the cohort, found %+v %+v", w, w.Quota)
		}
	},
	fix: "wait: for queue team-a's running groups to finish, or for what it lent to cohort research to be reclaimed",
}, {
	name: "quota never enough",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(8).cohort()
		return s, s.submit("huge", "team-a", 5, 0)
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		if w.Kind != musterv1alpha1.WaitQuotaNeverEnough || w.Quota == nil || w.Quota.Limit == nil || w.Quota.Limit.Value() != 4 {
			t.Errorf("expected QuotaNeverEnough with a limit of 4, found %+v %+v", w, w.Quota)
		}
	},
	fix: "raise the Queue's spec.quota or submit to a queue with more quota",
}, {
	name: "queue not found",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(1)
		return s, s.submit("lost", "nope", 1, 0)
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		if w.Kind != musterv1alpha1.WaitQueueNotFound || w.Queue != "nope" {
			t.Errorf("expected QueueNotFound of queue nope, found %+v", w)
		}
	},
	fix: "create Queue nope or fix the group's muster.dev/queue",
}, {
	name: "queue not allowed",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(1)
		s.e.SetQueue(engine.Queue{Queue: queue.Queue{Name: "team-a", Namespaces: map[string]bool{"a": true}}})
		return s, s.submit("stranger", "team-a", 1, 0)
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		if w.Kind != musterv1alpha1.WaitQueueNotAllowed || w.Queue != "team-a" || w.Namespace != "default" {
			t.Errorf("expected QueueNotAllowed of queue team-a for namespace default, found %+v", w)
		}
	},
	fix: "name a queue whose spec.namespaceSelector selects this namespace",
}, {
	name: "queue ambiguous",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(1)
		key := "Coscheduling/default/undecided"
		s.e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "undecided", MinMember: 1,
			QueueCandidates: []string{"team-a", "team-b"}})
		s.e.SetPod(gt.Pod("undecided-0").GPU(1).Obj(), key)
		s.step()
		return s, key
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		if w.Kind != musterv1alpha1.WaitQueueAmbiguous || !cmp.Equal(w.Candidates, []string{"team-a", "team-b"}) {
			t.Errorf("expected QueueAmbiguous between team-a and team-b, found %+v", w)
		}
	},
	fix: "name one of team-a, team-b with the muster.dev/queue annotation",
	old: "name one of the queues with the muster.dev/queue annotation",
}, {
	name: "placement unschedulable",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(2)
		s.run(t, "x", "", 0)
		s.run(t, "y", "", 0)
		return s, s.submit("waiter", "", 2, 0)
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		d := w.Placement
		if w.Kind != musterv1alpha1.WaitPlacement || d == nil || d.Code != musterv1alpha1.PlacementUnschedulable || len(d.Shapes) != 1 ||
			!cmp.Equal(d.Shapes[0].Reasons, []musterv1alpha1.NodeReasonCount{{Kind: "InsufficientResource", Detail: "nvidia.com/gpu", Nodes: 2}}) ||
			d.Shapes[0].Nodes != 2 || d.Shapes[0].Available != 0 || d.MinMember != 2 {
			t.Errorf("expected an Unschedulable diagnosis, 0/2 nodes available: 2 Insufficient nvidia.com/gpu, found %+v", d)
		}
	},
	fix:      "wait for nvidia.com/gpu to free up (the group holds nothing meanwhile), or ask for less nvidia.com/gpu",
	old:      "wait for capacity to free up (the group holds nothing meanwhile), or ask for less",
	evidence: []string{"0/2 nodes are available: 2 Insufficient nvidia.com/gpu"},
}, {
	name: "placement impossible",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(2)
		key := "Coscheduling/default/big"
		s.e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "big", MinMember: 1})
		s.e.SetPod(gt.Pod("big-0").GPU(8).Obj(), key)
		s.step()
		return s, key
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		d := w.Placement
		if w.Kind != musterv1alpha1.WaitPlacement || d == nil || d.Code != musterv1alpha1.PlacementImpossible || len(d.Shapes) != 1 ||
			d.Shapes[0].Shortfall == nil || d.Shapes[0].Shortfall.Need.Value() != 8 || d.Shapes[0].Shortfall.Largest.Value() != 1 {
			t.Errorf("expected an Impossible diagnosis short of GPUs (8 needed, 1 the largest), found %+v", d)
		}
	},
	fix: "ask for at most 1 nvidia.com/gpu per member of default/big-0, or add nodes with at least 8; retries will not help",
	old: "change the member shape (requests, nodeSelector, tolerations, topology) or add nodes that can hold it",
}, {
	name: "placement impossible: a taint",
	build: func(t *testing.T) (*scene, string) {
		s := &scene{e: sim.NewEngine(), now: sim.Epoch}
		s.e.SetNode(gt.Node("n-0").GPU(1).Taint("gpu", "a100", corev1.TaintEffectNoSchedule).Obj())
		return s, s.submit("plain", "", 1, 0)
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		d := w.Placement
		if w.Kind != musterv1alpha1.WaitPlacement || d == nil || d.Code != musterv1alpha1.PlacementImpossible || len(d.Shapes) != 1 ||
			len(d.Shapes[0].Reasons) != 1 || d.Shapes[0].Reasons[0].Kind != "UntoleratedTaint" {
			t.Errorf("expected an Impossible diagnosis of an untolerated taint, found %+v", d)
		}
	},
	fix: "tolerate taint {gpu: a100} in the pod template if the members may run there, or add nodes without it; retries will not help",
	old: "change the member shape (requests, nodeSelector, tolerations, topology) or add nodes that can hold it",
}, {
	name: "reserved for a starving group",
	build: func(t *testing.T) (*scene, string) {
		s := newScene(2)
		s.run(t, "x", "", 0)
		s.submit("big", "", 2, 0)
		s.now = s.now.Add(11 * time.Minute) // past the starvation threshold: big gets a reservation
		s.step()
		return s, s.submit("small", "", 1, 0)
	},
	check: func(t *testing.T, w *musterv1alpha1.WaitReason) {
		if w.Kind != musterv1alpha1.WaitReserved || w.ForPreemption || w.ReservedFor != "Coscheduling/default/big" {
			t.Errorf("expected Reserved for starving group big, found %+v", w)
		}
	},
	fix: "wait: capacity is reserved for group Coscheduling/default/big, which has waited longer",
	old: "wait: capacity is reserved for a group that has waited longer",
}}

// TestTypedReasonSurvivesToExplain: for each kind of wait, the engine's typed reason is
// written in the lifecycle record (EncodeRecord), decodes to the same data (RecordIn),
// renders back to the engine's own text (ReasonOf), and explain chooses its fix from
// it. The same record without the typed reason (as muster wrote them before) still
// explains, with the fix the kind alone supports.
func TestTypedReasonSurvivesToExplain(t *testing.T) {
	for _, tc := range waitCases {
		t.Run(tc.name, func(t *testing.T) {
			s, key := tc.build(t)
			st, ok := s.e.Group(key)
			if !ok || st.Wait == nil {
				t.Fatalf("%s: expected it to wait, found %+v", key, st)
			}
			rec := roundTrip(t, st)
			if d := cmp.Diff(engine.WaitRecord(st), rec.Wait); d != "" {
				t.Errorf("the typed reason read back differs (-written +read):\n%s", d)
			}
			if got, want := engine.ReasonOf(*rec.Wait).String(), st.Wait.String(); got != want {
				t.Errorf("the typed reason read back renders as %q, the engine's as %q", got, want)
			}
			tc.check(t, rec.Wait)
			report := explainRecord(t, st.Spec, rec)
			for _, want := range append([]string{"try: " + tc.fix}, tc.evidence...) {
				if !strings.Contains(report, want) {
					t.Errorf("explain of the typed record: expected %q in it, found:\n%s", want, report)
				}
			}
			rec.Wait = nil // as muster wrote records before
			old := explainRecord(t, st.Spec, rec)
			if want := "try: " + firstOf(tc.old, tc.fix); !strings.Contains(old, want) {
				t.Errorf("explain of the record without a typed reason: expected %q in it, found:\n%s", want, old)
			}
			if !strings.Contains(old, st.Waiting) {
				t.Errorf("explain of the record without a typed reason: expected its message %q in it, found:\n%s", st.Waiting, old)
			}
		})
	}
}

// TestTypedPreemptionSurvivesToExplain: an attempt preempted by a group of higher
// priority and one whose quota was reclaimed are recorded as such (Preemption,
// PreemptedFor), and explain says which from the record, not from the message.
func TestTypedPreemptionSurvivesToExplain(t *testing.T) {
	tests := []struct {
		name       string
		build      func(t *testing.T) (s *scene, victim, preemptor string)
		how        lifecycle.Preemption
		hint, fix  string
		messageWas string
	}{{
		name: "preempted",
		build: func(t *testing.T) (*scene, string, string) {
			s := newScene(1)
			victim := s.run(t, "young", "", 0)
			return s, victim, s.submit("vip", "", 1, 10)
		},
		how:  lifecycle.ByPriority,
		hint: ": a group of higher priority needed its nodes",
		fix:  "give its pods a PriorityClass at least as high as the preemptor's",
	}, {
		name: "reclaimed",
		build: func(t *testing.T) (*scene, string, string) {
			s := newScene(4).cohort()
			var victim string
			for _, n := range []string{"a1", "a2", "a3", "a4"} {
				victim = s.run(t, n, "team-a", 5)
			}
			return s, victim, s.submit("b1", "team-b", 1, 0)
		},
		how:  lifecycle.ByReclaim,
		hint: ": it ran on quota its queue borrowed from its cohort, and the lending queue took the quota back",
		fix:  "jobs that must not be reclaimed should fit their own queue's spec.quota",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, victim, preemptor := tc.build(t)
			st, _ := s.e.Group(victim)
			if n := len(st.Attempts); n == 0 || st.Attempts[n-1].Reason != lifecycle.ReasonPreempted {
				t.Fatalf("%s: expected its last attempt preempted, found %+v", victim, st.Attempts)
			}
			rec := roundTrip(t, st)
			a := rec.Attempts[len(rec.Attempts)-1]
			if a.Preemption != string(tc.how) || a.PreemptedFor != preemptor {
				t.Errorf("the recorded attempt: expected preemption %s for %s, found %q for %q", tc.how, preemptor, a.Preemption, a.PreemptedFor)
			}
			if past := engine.PastOf(rec); past.Attempts[len(past.Attempts)-1].Preemption != tc.how {
				t.Errorf("the past read back lost the preemption: %+v", past.Attempts)
			}
			// Queued again in its place, as muster does now.
			rec.Phase = string(lifecycle.Queued)
			if report := explainRecord(t, st.Spec, rec); !strings.Contains(report, tc.hint) {
				t.Errorf("explain of the queued victim: expected %q in it, found:\n%s", tc.hint, report)
			}
			// In Backoff, as records of the muster before in-place requeueing say.
			rec.Phase = string(lifecycle.Backoff)
			if report := explainRecord(t, st.Spec, rec); !strings.Contains(report, tc.fix) {
				t.Errorf("explain of the victim in Backoff: expected %q in it, found:\n%s", tc.fix, report)
			}
			rec.Attempts[len(rec.Attempts)-1].Preemption = "" // an old record
			report := explainRecord(t, st.Spec, rec)
			if !strings.Contains(report, "PriorityClass") || !strings.Contains(report, "fit it in its own queue's spec.quota") {
				t.Errorf("explain of an old record: expected both fixes, found:\n%s", report)
			}
		})
	}
}

// roundTrip encodes the record of st as the scheduler writes it and decodes it.
func roundTrip(t *testing.T, st engine.Status) musterv1alpha1.GroupLifecycle {
	t.Helper()
	raw, err := engine.EncodeRecord(st)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := musterv1alpha1.RecordIn(map[string]string{musterv1alpha1.LifecycleAnnotation: raw})
	if err != nil || !ok {
		t.Fatalf("decoding %s: ok %v, %v", raw, ok, err)
	}
	return rec
}

// explainRecord renders explain's report of a group of spec whose members are pending
// and whose record is rec.
func explainRecord(t *testing.T, spec engine.GroupSpec, rec musterv1alpha1.GroupLifecycle) string {
	t.Helper()
	var pods []*corev1.Pod
	for i := range spec.MinMember {
		pods = append(pods, gt.Pod(spec.Name+"-"+string(rune('0'+i))).GPU(1).Obj())
	}
	f := explain.Facts{Kind: "podgroup", Name: spec.Name, Namespace: spec.Namespace, SchedulerNames: []string{"muster"},
		GroupAPI: "scheduling.x-k8s.io/v1alpha1 PodGroup", GroupServed: true, GroupFound: true,
		Spec: spec, Members: pods, Lifecycle: &rec, Now: now,
		Queue: &musterv1alpha1.Queue{Spec: musterv1alpha1.QueueSpec{Quota: corev1.ResourceList{gt.GPU: resource.MustParse("2")}}}}
	if strings.HasPrefix(rec.Queue, "team-") {
		f.Queue.Spec.Cohort = "research" // as scene.cohort's queues
	}
	var b bytes.Buffer
	if err := explain.Build(f).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// TestForgedTypedReasonExplains: a typed reason is a claim (a tenant can write the
// record on its own group object): one that is incomplete or out of range explains,
// with the fix its fields support, and never panics.
func TestForgedTypedReasonExplains(t *testing.T) {
	spec := engine.GroupSpec{Key: "Coscheduling/default/x", Source: engine.Coscheduling, Namespace: "default", Name: "x", MinMember: 1}
	for _, w := range []musterv1alpha1.WaitReason{
		{},
		{Kind: "NoSuchKind"},
		{Kind: musterv1alpha1.WaitQuotaExceeded},
		{Kind: musterv1alpha1.WaitQuotaNeverEnough},
		{Kind: musterv1alpha1.WaitPlacement},
		{Kind: musterv1alpha1.WaitPlacement, Placement: &musterv1alpha1.PlacementDiagnosis{Code: "Impossible", MinMember: -3, Members: -1,
			Shapes: []musterv1alpha1.ShapeDiagnosis{{Nodes: -1, Available: 5, Reasons: []musterv1alpha1.NodeReasonCount{{Kind: "?", Nodes: -7}}},
				{Shortfall: &musterv1alpha1.Shortfall{}}}}},
		{Kind: musterv1alpha1.WaitReserved, ForPreemption: true},
		{Kind: musterv1alpha1.WaitQueueAmbiguous, Candidates: []string{}},
	} {
		for _, phase := range []lifecycle.Phase{lifecycle.Queued, lifecycle.Impossible} {
			rec := musterv1alpha1.GroupLifecycle{Phase: string(phase), Queue: "q", MinMember: 1, Wait: &w}
			report := explainRecord(t, spec, rec)
			if !strings.Contains(report, "verdict: step 4") {
				t.Errorf("%s record with wait %+v: expected a verdict at step 4, found:\n%s", phase, w, report)
			}
		}
	}
}
