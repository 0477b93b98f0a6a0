package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// filler returns an annotation value that leaves room bytes under the API's limit for
// an object whose other annotations take used bytes.
func filler(used, room int) string {
	return strings.Repeat("x", apivalidation.TotalAnnotationSizeLimitB-used-room-len(bigKey))
}

const bigKey = "e2e.muster.dev/filler"

// TestPlanNeverPassesTheAnnotationLimit: a plain group's member whose annotations are
// 200 bytes short of the 256 KiB limit is bound with its peer, and the group runs
// whole; the plan rides on the peer, the full member gets
// muster.dev/PlanRecorded=False (AnnotationsTooLarge, naming sizes), and the group's
// lifecycle record goes to the peer. Before, the full member stayed Pending on its
// node while its peer ran, and muster retried a "Too long" status write for ever.
func TestPlanNeverPassesTheAnnotationLimit(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "annotations", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	used := len(musterv1alpha1.MinMemberAnnotation) + 1
	var pods []*corev1.Pod
	for i, name := range []string{"big-0", "big-1"} {
		b := sandboxtest.Pod(ns, name).GPUs(1).SchedulerName("muster").Annotate(musterv1alpha1.MinMemberAnnotation, "2")
		if i == 0 {
			b.Annotate(bigKey, filler(used, 200))
		}
		p := b.Obj()
		p.Labels = map[string]string{musterv1alpha1.GroupLabel: "big"}
		pods = append(pods, env.CreatePod(t, p))
	}
	startMuster(t, env, musterOptions{})
	for _, p := range pods {
		env.WaitForPod(t, p, "Running", sandboxtest.PodPhase(corev1.PodRunning))
	}
	full := env.WaitForPod(t, pods[0], "PlanRecorded=False", func(p *corev1.Pod) bool {
		return sandboxtest.PodCondition(p, controller.ConditionPlanRecorded) == corev1.ConditionFalse
	})
	for _, c := range full.Status.Conditions {
		if c.Type == controller.ConditionPlanRecorded {
			if c.Reason != controller.ReasonAnnotationsTooLarge || !strings.Contains(c.Message, "262144") || !strings.Contains(c.Message, "big-1") {
				t.Errorf("expected reason %s naming the limit and the carrier big-1, found %s: %q", controller.ReasonAnnotationsTooLarge, c.Reason, c.Message)
			}
			t.Logf("big-0: %s", c.Message)
		}
	}
	if _, ok := full.Annotations[musterv1alpha1.PlacementAnnotation]; ok {
		t.Errorf("expected no plan on big-0, which has no room for it")
	}
	peer := getPod(t, env, ns, "big-1")
	if plan := planOn(t, *peer); len(plan.Pods) != 2 {
		t.Errorf("expected big-1 to carry the plan of both members, found %v", plan.Pods)
	}
	env.WaitForPod(t, peer, "the group's lifecycle record", func(p *corev1.Pod) bool {
		_, ok := p.Annotations[musterv1alpha1.LifecycleAnnotation]
		return ok
	})
}

// TestStatusRefusedForGoodIsNotRetried: a PodGroup whose annotations leave no room for
// muster's status gets a StatusNotWritten Event, and its group is scheduled all the
// same. muster does not retry the refused write on every pass (before, about 31 times
// a minute, for ever): the Event's series stays below the passes muster made.
func TestStatusRefusedForGoodIsNotRetried(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "refused", Count: 1, CPU: "16", Memory: "64Gi"})
	c := newClient(t, env.Config)
	pg := &spv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "full", Annotations: map[string]string{bigKey: filler(0, 100)}},
		Spec:       spv1alpha1.PodGroupSpec{MinMember: 1},
	}
	if err := c.Create(context.Background(), pg); err != nil {
		t.Fatalf("creating PodGroup full: %v", err)
	}
	p := sandboxtest.Pod(ns, "full-0").SchedulerName("muster").Obj()
	p.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "full"}
	p = env.CreatePod(t, p)
	startMuster(t, env, musterOptions{})
	env.WaitForPod(t, p, "Running", sandboxtest.PodPhase(corev1.PodRunning))
	var count int32
	env.WaitFor(t, "a StatusNotWritten Event on PodGroup full", func(ctx context.Context) (bool, error) {
		list, err := env.Kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if ev.Regarding.Name == "full" && ev.Reason == controller.ReasonStatusNotWritten {
				count = 1
				if ev.Series != nil {
					count = ev.Series.Count
				}
				t.Logf("StatusNotWritten: %s", ev.Note)
				return true, nil
			}
		}
		return false, nil
	})
	// Admission, binding, start and readiness are at most four states: a write
	// refused and retried on every pass would make tens of Events by now.
	if count > 6 {
		t.Errorf("expected the refused write given up until the group's state changed, found %d StatusNotWritten Events", count)
	}
}
