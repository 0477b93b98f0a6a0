package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestTwoJobsOnEightGPUsFromEverySource: the guide's two competing jobs (8 one-GPU
// nodes, two groups of 8 one-GPU members) for each group API, built from the example
// manifests: one group runs whole while the other holds no GPU, then the other runs
// whole after the first finishes.
func TestTwoJobsOnEightGPUsFromEverySource(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "two", Count: 8, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	for _, tc := range []struct{ name, manifest string }{
		{"Volcano", "volcano/generated.yaml"},
		{"Native", "native/generated.yaml"},
		{"Plain", "plain/pods.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			objs := readManifest(t, tc.manifest)
			runFor := map[string]string{kubelet.AnnotationRunFor: "2s"}
			gangFrom(t, objs, ns, "job-a", 8, runFor).create(t, c)
			gangFrom(t, objs, ns, "job-b", 8, runFor).create(t, c)
			waitOneAfterTheOther(t, env, c, ns, "job-a", "job-b", 8)
			waitGroupEvents(t, env, ns, "job-a", "Admitted", "PodsReady")
		})
	}
}

// waitGroupEvents waits until muster has recorded an Event of each reason on the
// group's object, or on its member pods (named group-N) for a group without one.
func waitGroupEvents(t *testing.T, env *sandboxtest.Env, ns, group string, reasons ...string) {
	t.Helper()
	env.WaitFor(t, fmt.Sprintf("Events %v on %s", reasons, group), func(ctx context.Context) (bool, error) {
		list, err := env.Kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, ev := range list.Items {
			name := ev.Regarding.Name
			if ev.ReportingController == "muster" && (name == group || strings.HasPrefix(name, group+"-")) {
				seen[ev.Reason] = true
			}
		}
		for _, r := range reasons {
			if !seen[r] {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitOneAfterTheOther waits until both groups of n members succeeded, failing if both
// ever hold a node at once, and checks that each held all n nodes at some point.
func waitOneAfterTheOther(t *testing.T, env *sandboxtest.Env, c client.Client, ns, a, b string, n int) {
	t.Helper()
	whole := map[string]bool{}
	env.WaitFor(t, a+" and "+b+" to succeed, one after the other", func(context.Context) (bool, error) {
		// One list for both groups: two lists could straddle the moment one group
		// finishes and the other is bound.
		states := podsOf(t, c, ns, a, b)
		sa, sb := states[a], states[b]
		if sa.holding > 0 && sb.holding > 0 {
			t.Fatalf("both groups hold nodes at once: %s %d pods, %s %d pods; pods:\n%s", a, sa.holding, b, sb.holding, describePods(t, c, ns))
		}
		for name, s := range map[string]podState{a: sa, b: sb} {
			if s.holding == n {
				whole[name] = true
			}
		}
		return sa.succeeded == n && sb.succeeded == n, nil
	})
	// Each group's pods run for 2s after a 100ms pull: a poll every 20ms sees each whole.
	for _, name := range []string{a, b} {
		if !whole[name] {
			t.Errorf("never saw %s with all %d pods bound at once", name, n)
		}
	}
}

// TestExampleManifestsRunWhole applies, as they are, the objects under examples/ that
// the operators produce (training-operator, Polyaxon through it, Trainer v2, Volcano,
// LeaderWorkerSet, native and plain groups), and a batch Job the sandbox's Job controller runs, and checks that each group runs whole, one after another on
// the same 8 one-GPU nodes.
func TestExampleManifestsRunWhole(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "examples", Count: 8, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	for _, ex := range []struct {
		file, group string
		members     int
	}{
		{"pytorchjob/generated.yaml", "bert", 8},
		{"polyaxon/generated.yaml", "bert-finetune", 4},
		{"trainer-v2/generated.yaml", "llama-sft", 4},
		{"volcano/generated.yaml", "resnet", 4},
		{"lws/generated.yaml", "infer", 4},
		{"native/generated.yaml", "vit", 4},
		{"plain/pods.yaml", "sweep", 4},
		{"batchjob/job.yaml", "allreduce", 4},
	} {
		t.Run(ex.file, func(t *testing.T) { runExampleWhole(t, env, c, ex.file, ex.group, ex.members) })
	}
}

// TestKubeRayExampleRunsWhole applies what KubeRay's scheduler-plugins integration
// creates for a RayCluster (examples/kuberay/): a PodGroup of the head and four GPU
// workers, whose pods KubeRay gives schedulerName scheduler-plugins-scheduler. muster
// serve, as deployed but for the additional schedulerName its Configuration names,
// runs the five whole, and then, in the same process, the plain group of
// examples/plain/, whose pods name muster.
func TestKubeRayExampleRunsWhole(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "kuberay", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{configure: func(cfg *musterv1alpha1.Configuration) {
		cfg.AdditionalSchedulerNames = []string{"scheduler-plugins-scheduler"}
	}})
	for _, ex := range []struct {
		file, group string
		members     int
	}{
		{"kuberay/generated.yaml", "llm-batch", 5},
		{"plain/pods.yaml", "sweep", 4},
	} {
		t.Run(ex.file, func(t *testing.T) { runExampleWhole(t, env, c, ex.file, ex.group, ex.members) })
	}
}

// runExampleWhole creates the objects of the example file, waits until members pods
// of group are Ready and, for a scheduler-plugins PodGroup, until muster says so
// in its PodsReady condition, and deletes them when the test ends.
func runExampleWhole(t *testing.T, env *sandboxtest.Env, c client.Client, file, group string, members int) {
	t.Helper()
	objs := readManifest(t, file)
	ns := objs[0].GetNamespace()
	// Cleanups run last first: this wait runs after createAll's deletions.
	t.Cleanup(func() {
		env.WaitFor(t, "the example's pods to be gone", func(context.Context) (bool, error) {
			return podsOf(t, c, ns, group)[group].total == 0, nil
		})
	})
	createAll(t, c, objs)
	env.WaitFor(t, fmt.Sprintf("the %d pods of %s to be Ready", members, group), func(context.Context) (bool, error) {
		return podsOf(t, c, ns, group)[group].ready == members, nil
	})
	if _, ok := objs[0].(*spv1alpha1.PodGroup); ok {
		waitCondition(t, env, c, ns, group, "PodsReady", metav1.ConditionTrue)
	}
}
