package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// pytorchJob is a PyTorchJob as training-operator v1.9 run with
// --gang-scheduler-name=muster creates it: a scheduler-plugins PodGroup named after
// the job and one master and n workers, each with one GPU.
type pytorchJob struct {
	ns, name string
	workers  int
	// annotations are set on every pod (sandbox faults).
	annotations map[string]string
	// groupAnnotations are set on the PodGroup (muster's per-group settings).
	groupAnnotations map[string]string
	// podAnnotations are set on the named pods only.
	podAnnotations map[string]map[string]string
	// gpus overrides the one GPU of the named pods.
	gpus map[string]int64
	// plain leaves the pods without an owner, as plain pods are.
	plain bool
	// priorityClass is the pods' spec.priorityClassName, if set.
	priorityClass string
	// restartPolicy is the pods' spec.restartPolicy (Never if unset).
	restartPolicy corev1.RestartPolicy
	// mutate, when set, changes each pod before it is created.
	mutate func(*corev1.Pod)
}

// podNames returns the names of the job's pods.
func (j pytorchJob) podNames() []string {
	names := []string{j.name + "-master-0"}
	for i := 0; i < j.workers; i++ {
		names = append(names, fmt.Sprintf("%s-worker-%d", j.name, i))
	}
	return names
}

// create creates the job's PodGroup and pods.
func (j pytorchJob) create(t *testing.T, env *sandboxtest.Env, c client.Client) {
	t.Helper()
	ctx := context.Background()
	size := int32(j.workers + 1)
	pg := &spv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.ns, Name: j.name, Annotations: j.groupAnnotations},
		Spec: spv1alpha1.PodGroupSpec{
			MinMember: size,
			MinResources: corev1.ResourceList{
				sandbox.ResourceGPU: *resource.NewQuantity(int64(size), resource.DecimalSI),
				corev1.ResourceCPU:  resource.MustParse(fmt.Sprintf("%dm", 100*size)),
			},
			ScheduleTimeoutSeconds: ptr.To[int32](60),
		},
	}
	if err := c.Create(ctx, pg); err != nil {
		t.Fatalf("creating PodGroup %s/%s: %v", j.ns, j.name, err)
	}
	j.createPods(t, env)
}

// createPods creates the job's pods, as its operator does at first and after they were
// deleted.
func (j pytorchJob) createPods(t *testing.T, env *sandboxtest.Env) {
	t.Helper()
	for _, name := range j.podNames() {
		gpus := int64(1)
		if n, ok := j.gpus[name]; ok {
			gpus = n
		}
		b := sandboxtest.Pod(j.ns, name).GPUs(gpus).SchedulerName("muster")
		for k, v := range j.annotations {
			b.Annotate(k, v)
		}
		for k, v := range j.podAnnotations[name] {
			b.Annotate(k, v)
		}
		if j.restartPolicy != "" {
			b.RestartPolicy(j.restartPolicy)
		}
		p := b.Obj()
		p.Spec.PriorityClassName = j.priorityClass
		p.Labels = map[string]string{
			musterv1alpha1.CoschedulingPodGroupLabel: j.name,
			"training.kubeflow.org/job-name":         j.name,
			"training.kubeflow.org/operator-name":    "pytorchjob-controller",
		}
		if !j.plain {
			p.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: j.name,
				UID: types.UID("uid-" + j.name), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}}
		}
		if j.mutate != nil {
			j.mutate(p)
		}
		env.CreatePod(t, p)
	}
}

// jobState counts a job's pods: bound and not finished, Succeeded, all.
type jobState struct{ holding, succeeded, total int }

func stateOf(t *testing.T, env *sandboxtest.Env, ns, group string) jobState {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: musterv1alpha1.CoschedulingPodGroupLabel + "=" + group,
	})
	if err != nil {
		t.Fatalf("listing pods of %s: %v", group, err)
	}
	var s jobState
	for _, p := range pods.Items {
		s.total++
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			s.succeeded++
		case p.Spec.NodeName != "" && p.Status.Phase != corev1.PodFailed:
			s.holding++
		}
	}
	return s
}

// TestTwoPyTorchJobsOnEightGPUs: two 8-GPU jobs on 8 one-GPU nodes. One runs whole,
// the other holds nothing until the first finishes, then runs.
func TestTwoPyTorchJobsOnEightGPUs(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "pt", Count: 8, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	runFor := map[string]string{kubelet.AnnotationRunFor: "2s"}
	a := pytorchJob{ns: ns, name: "job-a", workers: 7, annotations: runFor}
	b := pytorchJob{ns: ns, name: "job-b", workers: 7, annotations: runFor}
	a.create(t, env, c)
	b.create(t, env, c)
	sawWhole := map[string]bool{}
	env.WaitFor(t, "both jobs to finish, one after the other", func(context.Context) (bool, error) {
		// One list for both jobs: two could straddle one finishing and the other binding.
		states := podsOf(t, c, ns, "job-a", "job-b")
		sa, sb := states["job-a"], states["job-b"]
		if sa.holding > 0 && sb.holding > 0 {
			t.Fatalf("both jobs hold GPUs at once: job-a %d pods, job-b %d pods", sa.holding, sb.holding)
		}
		for name, s := range map[string]podState{"job-a": sa, "job-b": sb} {
			if s.holding == 8 {
				sawWhole[name] = true
			}
		}
		return sa.succeeded == 8 && sb.succeeded == 8, nil
	})
	if !sawWhole["job-a"] && !sawWhole["job-b"] {
		t.Errorf("never saw a job with all 8 pods bound at once")
	}
	waitCondition(t, env, c, ns, "job-a", "PodsReady", metav1.ConditionTrue)
}

// waitCondition waits for a condition in the muster.dev/status annotation of a
// scheduler-plugins PodGroup and returns it.
func waitCondition(t *testing.T, env *sandboxtest.Env, c client.Client, ns, name, typ string, status metav1.ConditionStatus) metav1.Condition {
	t.Helper()
	var found metav1.Condition
	env.WaitFor(t, fmt.Sprintf("PodGroup %s condition %s=%s", name, typ, status), func(ctx context.Context) (bool, error) {
		cond, ok := groupCondition(t, c, ns, name, typ)
		found = cond
		return ok && cond.Status == status, nil
	})
	return found
}

// groupCondition reads one condition of a scheduler-plugins PodGroup.
func groupCondition(t *testing.T, c client.Client, ns, name, typ string) (metav1.Condition, bool) {
	t.Helper()
	pg := &spv1alpha1.PodGroup{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
		t.Fatalf("reading PodGroup %s/%s: %v", ns, name, err)
	}
	conds, err := parseConditions(pg.Annotations["muster.dev/status"])
	if err != nil {
		t.Fatalf("PodGroup %s/%s: %v", ns, name, err)
	}
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}
