package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestVolcanoTaskMinimumsThroughServe: a Volcano PodGroup of minMember 3 with
// minTaskMember {ps: 1, worker: 2}, on two nodes of 4 CPUs and 2 GPUs, through muster
// serve as deployed. Four GPU workers, each with a CPU, come first: muster keeps the
// group gathering, naming the task it lacks, and binds none of them. Then the parameter
// server (3 CPUs, no GPU) comes: muster binds it with three workers. minMember alone
// would have bound the four workers at once, two on each node, leaving the parameter
// server's 3 CPUs nowhere. muster explain, meanwhile, names the missing task at step 3.
func TestVolcanoTaskMinimumsThroughServe(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "tasks", Count: 2, CPU: "4", Memory: "16Gi", GPUs: 2})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	ns := env.Namespace(t)

	pg := &volcanov1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job"},
		Spec: volcanov1beta1.PodGroupSpec{MinMember: 3, Queue: volcanov1beta1.DefaultQueue,
			MinTaskMember: map[string]int32{"ps": 1, "worker": 2}},
	}
	pod := func(name, task string, requests corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
				"scheduling.k8s.io/group-name": "job", "volcano.sh/task-spec": task}},
			Spec: corev1.PodSpec{SchedulerName: "muster", Containers: []corev1.Container{{
				Name: task, Image: "busybox:1.37", Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}}},
		}
	}
	objs := []client.Object{pg}
	for i := range 4 {
		objs = append(objs, pod("job-worker-"+strconv.Itoa(i), "worker", corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")}))
	}
	createAll(t, c, objs)

	want := "task ps: 0 of the 1 member pods its minimum (volcano.sh/task-spec) asks for exist"
	env.WaitFor(t, "the PodGroup's condition to name the missing task", func(ctx context.Context) (bool, error) {
		got := &volcanov1beta1.PodGroup{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pg), got); err != nil {
			return false, err
		}
		return slices.ContainsFunc(got.Status.Conditions, func(c volcanov1beta1.PodGroupCondition) bool {
			return strings.Contains(c.Message, want)
		}), nil
	})
	if held := podsOf(t, c, ns, "job")["job"].holding; held != 0 {
		t.Fatalf("%d workers bound while the group lacks its ps; pods:\n%s", held, describePods(t, c, ns))
	}
	f, err := explain.Gather(context.Background(), explain.NewClients(env.Kube, env.Dynamic), "podgroup/job", ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wantVerdict := "task ps has 0 of its minimum 1 member pods (pods annotated volcano.sh/task-spec: ps)"
	if v := explain.Build(f).Verdict; v.Step != 3 || v.Summary != wantVerdict {
		t.Errorf("explain podgroup/job: verdict %+v; expected step 3: %s", v, wantVerdict)
	}

	createAll(t, c, []client.Object{pod("job-ps-0", "ps", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")})})
	env.WaitFor(t, "the ps and three workers to be bound", func(ctx context.Context) (bool, error) {
		ps := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job-ps-0"}, ps); err != nil {
			return false, err
		}
		return ps.Spec.NodeName != "" && podsOf(t, c, ns, "job")["job"].holding == 4, nil
	})
}
