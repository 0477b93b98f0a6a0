package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestCrashMidBinding kills muster (SIGKILL) after k of a group's n binds (the
// binds after the k-th are held at the proxy, never reaching the API server, as if
// muster died before sending them), starts a new muster,
// and checks that no partial group is left holding resources: the plan is completed
// when its nodes still fit (the bound members stay), and undone when another pod took
// a planned node (every bound member is evicted, and the group is placed anew). A
// finished plan (k = n), which stays on the pods as the record of their placement, is
// left alone. No pod is ever bound twice or moved. Before the restart, every bound
// member carries the whole plan; a group larger than those whose every bind carries
// it is bound only after its first member, which does.
func TestCrashMidBinding(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "crash", Count: 5, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	for _, tc := range []struct {
		k, n     int
		takeNode bool
	}{{1, 4, false}, {2, 4, false}, {3, 4, false}, {2, 4, true}, {4, 4, false}, {1, 40, false}} {
		name := fmt.Sprintf("%d of %d bound", tc.k, tc.n)
		if tc.takeNode {
			name += ", a planned node taken"
		}
		t.Run(name, func(t *testing.T) {
			if tc.n > 4 {
				env.CreateNodes(t, sandbox.NodePool{Name: "crash-big", Count: tc.n, CPU: "16", Memory: "64Gi", GPUs: 1})
			}
			ns := env.Namespace(t)
			moves := watchNodeNames(t, env, ns)
			proxy := env.StartProxy(t)
			var binds atomic.Int32
			proxy.SetHook(func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
				if _, _, _, ok := sandboxtest.BindingOf(r); ok && binds.Add(1) > int32(tc.k) {
					proxy.Hold(w, r)
					return
				}
				forward.ServeHTTP(w, r)
			})
			first := startMuster(t, env, musterOptions{proxy: proxy})
			job := pytorchJob{ns: ns, name: "gang", workers: tc.n - 1, plain: true}
			job.create(t, env, c)
			env.WaitFor(t, fmt.Sprintf("%d members bound", tc.k), func(context.Context) (bool, error) {
				return stateOf(t, env, ns, "gang").holding == tc.k, nil
			})
			first.kill(t)
			bound := boundUIDs(t, env, ns)
			for _, p := range listPods(t, env, ns) {
				if p.Spec.NodeName == "" {
					continue
				}
				if plan := planOn(t, p); len(plan.Pods) != tc.n {
					t.Errorf("expected bound pod %s to carry the plan of all %d members, found %d: %v", p.Name, tc.n, len(plan.Pods), plan.Pods)
				}
			}
			if tc.takeNode {
				takePlannedNode(t, env, c, ns)
			}
			startMuster(t, env, musterOptions{})
			waitCondition(t, env, c, ns, "gang", "PodsReady", metav1.ConditionTrue)
			if s := stateOf(t, env, ns, "gang"); s.holding != tc.n {
				t.Errorf("expected the group whole, %d pods bound, found %d", tc.n, s.holding)
			}
			survivors := 0
			for uid := range bound {
				if _, ok := boundUIDs(t, env, ns)[uid]; ok {
					survivors++
				}
			}
			switch {
			case tc.takeNode && survivors != 0:
				t.Errorf("the plan could not be completed: expected its %d bound members evicted, found %d left", tc.k, survivors)
			case !tc.takeNode && survivors != tc.k:
				t.Errorf("the plan could be completed: expected its %d bound members kept, found %d", tc.k, survivors)
			}
			for _, m := range moves() {
				t.Error(m)
			}
			assertNoFailedBinding(t, env, ns)
		})
	}
}

// listPods returns the pods of ns.
func listPods(t *testing.T, env *sandboxtest.Env, ns string) []corev1.Pod {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods of %s: %v", ns, err)
	}
	return pods.Items
}

// planOn returns the plan that bound pod p carries, failing the test if it has none.
func planOn(t *testing.T, p corev1.Pod) controller.Plan {
	t.Helper()
	var plan controller.Plan
	raw, ok := p.Annotations[musterv1alpha1.PlacementAnnotation]
	if !ok {
		t.Fatalf("expected bound pod %s to carry %s, found annotations %v", p.Name, musterv1alpha1.PlacementAnnotation, p.Annotations)
	}
	if err := json.Unmarshal([]byte(raw), &plan); err != nil {
		t.Fatalf("decoding the plan on pod %s, %q: %v", p.Name, raw, err)
	}
	return plan
}

// watchNodeNames watches the pods of ns and returns a function that lists every pod
// (by UID) whose nodeName changed once set: a pod bound twice.
func watchNodeNames(t *testing.T, env *sandboxtest.Env, ns string) func() []string {
	t.Helper()
	w, err := env.Kube.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watching pods of %s: %v", ns, err)
	}
	var mu sync.Mutex
	nodes := map[types.UID]string{}
	var moves []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Spec.NodeName == "" {
				continue
			}
			mu.Lock()
			if prev, ok := nodes[p.UID]; ok && prev != p.Spec.NodeName {
				moves = append(moves, fmt.Sprintf("pod %s (uid %s) moved from %s to %s", p.Name, p.UID, prev, p.Spec.NodeName))
			}
			nodes[p.UID] = p.Spec.NodeName
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), moves...)
	}
}

// boundUIDs returns the UIDs of the bound pods of ns.
func boundUIDs(t *testing.T, env *sandboxtest.Env, ns string) map[types.UID]bool {
	t.Helper()
	out := map[types.UID]bool{}
	for _, p := range listPods(t, env, ns) {
		if p.Spec.NodeName != "" {
			out[p.UID] = true
		}
	}
	return out
}

// takePlannedNode binds a pod of another scheduler to a node that the plan a bound
// member of ns carries assigns to a member not yet bound, and waits until the kubelet
// runs it.
func takePlannedNode(t *testing.T, env *sandboxtest.Env, c client.Client, ns string) {
	t.Helper()
	for _, p := range listPods(t, env, ns) {
		if p.Spec.NodeName == "" {
			continue
		}
		plan := planOn(t, p)
		for _, name := range sortedNames(plan.Pods) {
			if getPod(t, env, ns, name).Spec.NodeName != "" {
				continue
			}
			intruder := env.CreatePod(t, sandboxtest.Pod(ns, "intruder").GPUs(1).SchedulerName("other-scheduler").Obj())
			env.Bind(t, intruder, plan.Pods[name].Node)
			env.WaitForPod(t, intruder, "Running", sandboxtest.PodPhase(corev1.PodRunning))
			return
		}
	}
	t.Fatalf("expected a bound member carrying a plan with an unbound member, found none in %s", ns)
}

// sortedNames returns a plan's pod names, sorted.
func sortedNames(pods map[string]controller.Assignment) []string {
	names := make([]string, 0, len(pods))
	for name := range pods {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// assertNoFailedBinding fails if any Event of ns reports a failed bind.
func assertNoFailedBinding(t *testing.T, env *sandboxtest.Env, ns string) {
	t.Helper()
	events, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing events of %s: %v", ns, err)
	}
	for _, ev := range events.Items {
		if ev.Reason == "FailedBinding" {
			t.Errorf("expected no failed bind, found event on %s: %s", ev.InvolvedObject.Name, ev.Message)
		}
	}
}
