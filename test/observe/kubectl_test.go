package observe

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cli"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// kubectlMuster runs `kubectl muster ARGS` against the sandbox and returns its output.
func kubectlMuster(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := cli.NewPluginCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("kubectl muster %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// groupRow waits until `get groups` shows group in phase, and returns its row.
func waitGroupRow(t *testing.T, env *sandboxtest.Env, ns, group, phase string, ok func(cli.GroupRow) bool) cli.GroupRow {
	t.Helper()
	var found cli.GroupRow
	env.WaitFor(t, "group "+group+" in phase "+phase, func(ctx context.Context) (bool, error) {
		rows, err := cli.GroupRows(ctx, explain.Clients{Kube: env.Kube, Dynamic: env.Dynamic}, ns, time.Now())
		if err != nil {
			return false, err
		}
		for _, r := range rows {
			if r.Name == group {
				found = r
				return r.Phase == phase && (ok == nil || ok(r)), nil
			}
		}
		return false, nil
	})
	t.Logf("group %s: %+v", group, found)
	return found
}

// stable blanks the columns of `get groups` that change from run to run, how long a group
// has waited (when it waits) and the GPU-seconds its members hold, both measured live, and
// joins each line's fields with single spaces (the blanks change the column widths).
func stable(table string) string {
	var out []string
	for i, line := range strings.Split(strings.TrimSpace(table), "\n") {
		f := strings.Fields(line)
		if i > 0 && len(f) >= 7 {
			if f[5] != "-" {
				f[5] = "<since>"
			}
			f[6] = "<gpu-s>"
		}
		out = append(out, strings.Join(f, " "))
	}
	return strings.Join(out, "\n") + "\n"
}

// TestKubectlMuster: get queues and get groups on a queue with one group running and one
// over quota (golden file testdata/kubectl.txt); stop evicts the running group, muster
// keeps it Stopped and admits the other in its place; resume queues it again.
func TestKubectlMuster(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "kubectl", Count: 3, CPU: "16", Memory: "64Gi", GPUs: 1})
	ns := namespace(t, env, "kubectl")
	labelled, err := env.Kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labelled.Labels["team"] = "kubectl"
	if _, err := env.Kube.CoreV1().Namespaces().Update(context.Background(), labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	queue := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": musterv1alpha1.GroupVersion.String(), "kind": "Queue",
		"metadata": map[string]any{"name": "kubectl-team"},
		"spec": map[string]any{"quota": map[string]any{"nvidia.com/gpu": "2"}, "weight": 2, "cohort": "kubectl",
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "kubectl"}}},
	}}
	if _, err := env.Dynamic.Resource(musterv1alpha1.GroupVersion.WithResource("queues")).Create(context.Background(), queue, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Sandbox.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	startMuster(t, env)
	podGroup(t, env, ns, "runs", 2, nil, nil)
	createMembers(t, env, ns, "runs", 2, 1, nil)
	waitGroupRow(t, env, ns, "runs", "Running", func(r cli.GroupRow) bool { return r.Ready == 2 })
	podGroup(t, env, ns, "waits", 1, nil, nil)
	createMembers(t, env, ns, "waits", 1, 1, nil)
	waitGroupRow(t, env, ns, "waits", "Queued", func(r cli.GroupRow) bool { return r.WaitingSince != nil })
	env.WaitFor(t, "Queue kubectl-team to show 2 GPUs used and 1 pending", func(ctx context.Context) (bool, error) {
		rows, err := cli.QueueRows(ctx, explain.Clients{Kube: env.Kube, Dynamic: env.Dynamic})
		for _, r := range rows {
			if r.Name == "kubectl-team" {
				return r.Pending == 1 && r.Used.Name("nvidia.com/gpu", "").Value() == 2 && r.Active != "", err
			}
		}
		return false, err
	})

	got := "$ kubectl muster get queues -o wide\n" + only(kubectlMuster(t, kubeconfig, "get", "queues", "-o", "wide"), "NAME ", "kubectl-team ") +
		"$ kubectl muster get groups -n kubectl\n" + stable(kubectlMuster(t, kubeconfig, "get", "groups", "-n", ns)) +
		"$ kubectl muster stop runs -n kubectl\n" + kubectlMuster(t, kubeconfig, "stop", "runs", "-n", ns)
	compareGolden(t, "kubectl muster", "kubectl", got)

	waitGroupRow(t, env, ns, "runs", "Stopped", nil)
	waitGroupRow(t, env, ns, "waits", "Running", nil)
	if r := waitGroupRow(t, env, ns, "runs", "Stopped", nil); r.GPUSeconds != 0 {
		t.Errorf("the stopped group holds %d GPU-seconds, expected its members evicted", r.GPUSeconds)
	}
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: musterv1alpha1.CoschedulingPodGroupLabel + "=runs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodFailed {
			t.Errorf("pod %s of the stopped group is bound to %s", p.Name, p.Spec.NodeName)
		}
	}
	if out := kubectlMuster(t, kubeconfig, "resume", "runs", "-n", ns); !strings.Contains(out, "kubectl/runs resumed") {
		t.Errorf("resume printed %q", out)
	}
	waitGroupRow(t, env, ns, "runs", "Queued", nil)
}

// only keeps the lines of out that start with one of prefixes: the sandbox is shared, and
// other tests' Queues stay in it.
func only(out string, prefixes ...string) string {
	var keep []string
	for _, line := range strings.SplitAfter(out, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				keep = append(keep, line)
				break
			}
		}
	}
	return strings.Join(keep, "")
}

// compareGolden compares the output of command (got) with testdata/NAME.txt, or
// rewrites it with -rewrite.
func compareGolden(t *testing.T, command, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".txt")
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s output differs from %s (-want +got):\n%s", command, path, d)
	}
}
