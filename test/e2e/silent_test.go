package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
	"github.com/muster-sched/muster/internal/source"
)

// TestSilentCasesSayWhy: the cases that used to wait with no word each say why. A pod
// naming a PodGroup that does not exist gets PodScheduled=False, GroupNotFound, and an
// Event; one naming a Volcano group "team/job" gets InvalidGroupName; a pod naming
// groups of two APIs joins the first (and is bound) with an AmbiguousGroup Event; a
// PodGroup with minMember 10⁹ whose one pod no controller owns says, while it
// gathers, that nothing will create the missing members.
func TestSilentCasesSayWhy(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "silent", Count: 1, CPU: "16", Memory: "64Gi"})
	c := newClient(t, env.Config)
	ctx := context.Background()
	for _, pg := range []*spv1alpha1.PodGroup{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exists"}, Spec: spv1alpha1.PodGroupSpec{MinMember: 1}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "huge"}, Spec: spv1alpha1.PodGroupSpec{MinMember: 1_000_000_000}},
	} {
		if err := c.Create(ctx, pg); err != nil {
			t.Fatalf("creating PodGroup %s: %v", pg.Name, err)
		}
	}
	pod := func(name string, labels, annotations map[string]string) *corev1.Pod {
		p := sandboxtest.Pod(ns, name).SchedulerName("muster").Obj()
		p.Labels, p.Annotations = labels, annotations
		return env.CreatePod(t, p)
	}
	missing := pod("missing", map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "no-such-group"}, nil)
	slash := pod("slash", nil, map[string]string{musterv1alpha1.VolcanoGroupNameAnnotation: "team/job"})
	both := pod("both", map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "exists", musterv1alpha1.GroupLabel: "plain"},
		map[string]string{musterv1alpha1.MinMemberAnnotation: "1"})
	pod("huge-0", map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "huge"}, nil)
	startMuster(t, env, musterOptions{})

	for _, tc := range []struct {
		pod    *corev1.Pod
		reason string
		want   string
	}{
		{missing, source.ReasonGroupNotFound, "does not exist"},
		{slash, source.ReasonInvalidGroupName, `"team/job": not a group name`},
	} {
		got := env.WaitForPod(t, tc.pod, "PodScheduled=False, "+tc.reason, func(p *corev1.Pod) bool {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == tc.reason {
					return true
				}
			}
			return false
		})
		for _, cond := range got.Status.Conditions {
			if cond.Type == corev1.PodScheduled && !strings.Contains(cond.Message, tc.want) {
				t.Errorf("pod %s: expected the PodScheduled message to say %q, found %q", tc.pod.Name, tc.want, cond.Message)
			}
		}
		waitPodEvent(t, env, ns, tc.pod.Name, tc.reason)
	}
	env.WaitForPod(t, both, "bound in PodGroup exists", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	waitPodEvent(t, env, ns, "both", source.ReasonAmbiguousGroup)
	var last metav1.Condition
	env.WaitFor(t, "the Gathering condition of huge to say nothing creates the missing members", func(context.Context) (bool, error) {
		last, _ = groupCondition(t, c, ns, "huge", "Admitted")
		return strings.Contains(last.Message, "nothing will create the 999999999 missing"), nil
	})
	t.Logf("huge: %s", last.Message)
}

// TestPodGroupWithinTheGraceSparesTheWarning: a pod names a PodGroup that is created only
// after muster has seen the pod, as when a job's pods reach muster before the PodGroup
// its controller created first. muster runs on its test clock, which this test never
// moves, so the 5 s grace before GroupNotFound never runs out: muster says nothing of
// the missing PodGroup, and binds the pod once the PodGroup comes. The pod gets no
// GroupNotFound Event. (Without the grace muster said GroupNotFound the moment it saw
// the pod.)
func TestPodGroupWithinTheGraceSparesTheWarning(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "grace", Count: 1, CPU: "16", Memory: "64Gi"})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{clock: true})
	early := sandboxtest.Pod(ns, "early").SchedulerName("muster").Obj()
	early.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "late"}
	early = env.CreatePod(t, early)
	// muster's pod watch delivers pods in the order they were created: once muster has
	// bound marker, created after early, it has seen early, with no PodGroup late.
	marker := env.CreatePod(t, sandboxtest.Pod(ns, "marker").SchedulerName("muster").Obj())
	env.WaitForPod(t, marker, "bound", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	late := &spv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}, Spec: spv1alpha1.PodGroupSpec{MinMember: 1}}
	if err := c.Create(context.Background(), late); err != nil {
		t.Fatalf("creating PodGroup late: %v", err)
	}
	env.WaitForPod(t, early, "bound in PodGroup late", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	list, err := env.Kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Items {
		if ev.Regarding.Name == "early" && ev.Reason == source.ReasonGroupNotFound {
			t.Errorf("pod early got a %s Event for a PodGroup that came within the grace: %s", ev.Reason, ev.Note)
		}
	}
}

// waitPodEvent waits until muster has recorded an Event of reason on pod ns/name.
func waitPodEvent(t *testing.T, env *sandboxtest.Env, ns, name, reason string) {
	t.Helper()
	env.WaitFor(t, "an Event "+reason+" on pod "+name, func(ctx context.Context) (bool, error) {
		list, err := env.Kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if ev.ReportingController == "muster" && ev.Regarding.Name == name && ev.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestHeldNoteDoesNotHoldTheQueue: muster's write of GroupNotFound on a pod whose
// PodGroup does not exist, held by the API server, holds up nothing else: a pod of
// another group is bound meanwhile. Once the API server answers, the pod says
// GroupNotFound (written again if the held write met a pod changed since). (That write was made on muster's loop: when a job's pods reached muster
// before its PodGroup, a held write stopped all scheduling.)
func TestHeldNoteDoesNotHoldTheQueue(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "heldnote", Count: 1, CPU: "16", Memory: "64Gi"})
	proxy := env.StartProxy(t)
	h := newHeldPatch(ns, "missing", source.ReasonGroupNotFound)
	proxy.SetHook(h.hook)
	startMuster(t, env, musterOptions{proxy: proxy})
	missing := sandboxtest.Pod(ns, "missing").SchedulerName("muster").Obj()
	missing.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "no-such-group"}
	missing = env.CreatePod(t, missing)
	boundWhileHeld(t, env, ns, h, "its GroupNotFound write on pod missing")
	close(h.release)
	// The held write names the resourceVersion muster read the pod at; if the pod changed
	// since (muster records the group's state on it), it is refused and written again.
	t.Logf("the held write, released: %d", <-h.answer)
	env.WaitForPod(t, missing, "PodScheduled=False, GroupNotFound", func(p *corev1.Pod) bool {
		ps := podScheduled(p)
		return ps.Status == corev1.ConditionFalse && ps.Reason == source.ReasonGroupNotFound
	})
}

// TestFailedNoteIsWrittenAgain: the API server answers muster's first GroupNotFound write
// on a pod whose PodGroup does not exist with 500. muster writes it again (1 s later) and
// the pod says GroupNotFound. (A note is said once per pod and reason: a failed write
// was never sent again, and the pod said nothing.)
func TestFailedNoteIsWrittenAgain(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "failnote", Count: 1, CPU: "16", Memory: "64Gi"})
	proxy := env.StartProxy(t)
	hook, writes := refuseFirst(http.MethodPatch, "/api/v1/namespaces/"+ns+"/pods/missing/status", `"reason":"`+source.ReasonGroupNotFound+`"`)
	proxy.SetHook(hook)
	startMuster(t, env, musterOptions{proxy: proxy})
	missing := sandboxtest.Pod(ns, "missing").SchedulerName("muster").Obj()
	missing.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "no-such-group"}
	missing = env.CreatePod(t, missing)
	env.WaitForPod(t, missing, "PodScheduled=False, GroupNotFound", func(p *corev1.Pod) bool {
		ps := podScheduled(p)
		return ps.Status == corev1.ConditionFalse && ps.Reason == source.ReasonGroupNotFound
	})
	if n := writes.Load(); n < 2 {
		t.Errorf("GroupNotFound written with %d writes, want the refused one and another", n)
	}
	t.Logf("GroupNotFound written after %d writes, the first answered 500", writes.Load())
}
