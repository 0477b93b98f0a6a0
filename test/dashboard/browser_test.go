package dashboard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// browserTimeout bounds each wait in the browser: muster deciding, a job running its
// course, a page updating itself.
const browserTimeout = 3 * time.Minute

// TestTwoJobsInTheBrowser is the guide's two-jobs example on eight one-GPU nodes, seen
// in the dashboard: one job's eight GPUs training, the other job holding none, its
// verdict the same as muster explain's, and the cluster page updating itself (no
// reload) when the first job ends and the second starts.
func TestTwoJobsInTheBrowser(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "dash-gpu", Count: 8, CPU: "8", Memory: "32Gi", GPUs: 1})
	queueName := createQueue(t, env, ns, 8)
	url, stopMuster := startMuster(t, env)
	for _, job := range []string{"job-a", "job-b"} {
		createPodGroup(t, env, ns, job, queueName, 8)
	}
	for i := 0; i < 8; i++ {
		for _, job := range []string{"job-a", "job-b"} {
			env.CreatePod(t, worker(ns, job, i))
		}
	}
	ctx := browser(t)
	do(t, ctx, "open the cluster page", chromedp.Navigate(url))
	first, second := seeOneJobTraining(t, ctx, env, ns, len(nodes))
	readTheWaitingVerdict(t, ctx, env, url, ns, second)
	seeTheLiveUpdate(t, ctx, url, ns, first, second)
	readTheCost(t, ctx, url, queueName)

	// A restarted muster reads the ledger back from its namespace.
	stopMuster()
	url, _ = startMuster(t, env)
	do(t, ctx, "open the cost page of the restarted muster", chromedp.Navigate(url+"cost"))
	restored := value(t, ctx, "wait for the last day to name the queue (the page updates itself)",
		chromedp.Poll[string](fmt.Sprintf(`(() => { const w = document.getElementById("w-last-day");
			return w && w.textContent.includes(%q) ? w.textContent : ""; })()`, queueName),
			chromedp.WithPollingTimeout(sandboxtest.WaitTimeout)))
	t.Logf("cost after a restart, last day: %s", strings.Join(strings.Fields(restored), " "))
}

// seeOneJobTraining waits until one job's eight GPUs are training on the cluster page
// and the other job holds none, checks the cells are on the nodes muster bound the
// first job to, and returns the jobs in the order muster admitted them.
func seeOneJobTraining(t *testing.T, ctx context.Context, env *sandboxtest.Env, ns string, nodes int) (first, second string) {
	t.Helper()
	first = value(t, ctx, "wait for one job's 8 GPUs training and none held by the other",
		chromedp.Poll[string](fmt.Sprintf(`(() => {
			const training = g => document.querySelectorAll('a.c[data-group="%[1]s/' + g + '"][data-hold="training"]').length;
			const any = g => document.querySelectorAll('[data-group="%[1]s/' + g + '"]').length;
			if (training("job-a") === 8 && any("job-b") === 0) return "job-a";
			if (training("job-b") === 8 && any("job-a") === 0) return "job-b";
			return "";
		})()`, ns), chromedp.WithPollingTimeout(browserTimeout)))
	second = map[string]string{"job-a": "job-b", "job-b": "job-a"}[first]
	shown := value(t, ctx, "read the nodes of the first job's cells", chromedp.Evaluate[[]string](fmt.Sprintf(
		`[...document.querySelectorAll('.node')].filter(n => n.querySelector('a.c[data-group="%s/%s"]')).map(n => n.dataset.node).sort()`, ns, first)))
	if want := boundNodes(t, env, ns, first); strings.Join(shown, ",") != strings.Join(want, ",") {
		t.Errorf("%s's cells are on nodes %v; muster bound its pods to %v", first, shown, want)
	}
	if len(shown) != nodes {
		t.Errorf("%s's cells are on %d nodes, want all %d", first, len(shown), nodes)
	}
	t.Logf("%s training on %v; %s waiting", first, shown, second)
	screenshot(t, ctx, "dashboard-cluster.png")
	dark(t, ctx, true)
	screenshot(t, ctx, "dashboard-cluster-dark.png")
	dark(t, ctx, false)
	return first, second
}

// readTheWaitingVerdict opens the waiting group from the queues page and checks that
// its verdict and walk are muster explain's.
func readTheWaitingVerdict(t *testing.T, ctx context.Context, env *sandboxtest.Env, url, ns, group string) {
	t.Helper()
	waiting := chromedp.CSS(fmt.Sprintf(`li[data-group="%s/%s"] a`, ns, group))
	do(t, ctx, "open the queues page", chromedp.Navigate(url+"queues"), chromedp.WaitVisible(waiting))
	screenshot(t, ctx, "dashboard-queues.png")
	do(t, ctx, "open the waiting group", chromedp.Click(waiting), chromedp.WaitVisible(chromedp.CSS(`#verdict-summary`)))
	want := explainVerdict(t, env, ns, group)
	steps := value(t, ctx, "count the walk's steps", chromedp.Poll[int](`document.querySelectorAll('#walk > li').length`, chromedp.WithPollingTimeout(browserTimeout)))
	got := value(t, ctx, "read the verdict", chromedp.Text(chromedp.CSS(`#verdict-summary`)))
	if got != want.Summary || steps != 6 {
		t.Errorf("the group page shows verdict %q after %d steps; muster explain says %q after 6", got, steps, want.Summary)
	}
	t.Logf("%s's verdict, in the browser as from muster explain: %s", group, got)
	screenshot(t, ctx, "dashboard-group.png")
}

// seeTheLiveUpdate watches the cluster page, never reloaded, until the first job has
// ended and the second job's eight GPUs are training.
func seeTheLiveUpdate(t *testing.T, ctx context.Context, url, ns, first, second string) {
	t.Helper()
	do(t, ctx, "back to the cluster page", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`#heat`)),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))
	value(t, ctx, "wait for the second job's 8 GPUs training, without a reload",
		chromedp.Poll[bool](fmt.Sprintf(`window.notReloaded === true &&
			document.querySelectorAll('a.c[data-group="%[1]s/%[2]s"][data-hold="training"]').length === 8 &&
			document.querySelectorAll('[data-group="%[1]s/%[3]s"]').length === 0`, ns, second, first),
			chromedp.WithPollingTimeout(browserTimeout)))
	screenshot(t, ctx, "dashboard-cluster-after.png") // not in the docs: the same picture, the other job
}

// readTheCost checks that the cost page's last hour counts GPU-seconds held before
// Ready in the jobs' queue.
func readTheCost(t *testing.T, ctx context.Context, url, queue string) {
	t.Helper()
	do(t, ctx, "open the cost page", chromedp.Navigate(url+"cost"))
	cost := value(t, ctx, "read the last hour", chromedp.Text(chromedp.CSS(`#w-last-hour`)))
	if !strings.Contains(cost, queue) || !strings.Contains(cost, string(sandbox.ResourceGPU)) {
		t.Errorf("the cost page's last hour does not name queue %s and %s:\n%s", queue, sandbox.ResourceGPU, cost)
	}
	t.Logf("cost, last hour: %s", strings.Join(strings.Fields(cost), " "))
	screenshot(t, ctx, "dashboard-cost.png")
}

// TestThousandNodesOnOneScreen checks that the heat map of 1,000 eight-GPU nodes fits
// in one 1280×900 window, that every node has its row, and that a gang muster places,
// another scheduler's pods and cordoned nodes each show in their colour.
func TestThousandNodesOnOneScreen(t *testing.T) {
	env := sandboxtest.Shared(t)
	names := env.CreateNodes(t, sandbox.NodePool{Name: "dash-big", Count: 1000, CPU: "96", Memory: "768Gi", GPUs: 8})
	ns := env.Namespace(t)
	// Something of every colour: 30 nodes cordoned, 40 held by another scheduler's
	// pods, a gang of 16 eight-GPU workers that muster places.
	for _, n := range names[:30] {
		patch := []byte(`{"spec":{"unschedulable":true}}`)
		if _, err := env.Kube.CoreV1().Nodes().Patch(context.Background(), n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range names[500:540] {
		p := env.CreatePod(t, sandboxtest.Pod(ns, fmt.Sprintf("other-%d", i)).GPUs(8).SchedulerName("default-scheduler").Obj())
		env.Bind(t, p, n)
	}
	url, _ := startMuster(t, env)
	createQueueless(t, env, ns, "big", 16)
	for i := 0; i < 16; i++ {
		p := sandboxtest.Pod(ns, fmt.Sprintf("big-worker-%d", i)).GPUs(8).SchedulerName("muster").Obj()
		p.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: "big"}
		env.CreatePod(t, p)
	}
	ctx := browser(t)
	do(t, ctx, "open the cluster page", chromedp.Navigate(url))
	rows := value(t, ctx, "wait for the 1,000 rows, the gang training, the other pods and the cordoned nodes", chromedp.Poll[int](
		`(() => { const n = s => document.querySelectorAll(s).length;
			return n('.node[data-node^="dash-big"]') >= 1000 && n('.node[data-node^="dash-big"] a.c[data-hold="training"]') === 128 &&
				n('.node[data-node^="dash-big"] .c[data-hold="other"]') === 320 && n('.node[data-node^="dash-big"] .c[data-hold="down"]') === 240 &&
				n('.node[data-node^="dash-big"]'); })()`,
		chromedp.WithPollingTimeout(browserTimeout)))
	bottom := value(t, ctx, "measure the heat map", chromedp.Evaluate[float64](`document.getElementById('heat').getBoundingClientRect().bottom`))
	height := value(t, ctx, "measure the window", chromedp.Evaluate[float64](`window.innerHeight`))
	if rows != 1000 || bottom > height {
		t.Errorf("heat map: %d rows of dash-big nodes, bottom at %.0f px in a %.0f px window; want 1000 rows within it", rows, bottom, height)
	}
	t.Logf("1000 nodes × 8 GPUs: heat map bottom at %.0f px of %.0f", bottom, height)
	screenshot(t, ctx, "dashboard-1000-nodes.png")
}

// browser starts headless chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("Debian's chromium is needed (hack/install-chromium.sh installs it): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, stopAllocator := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, stop := chromedp.NewContext(actx)
	t.Cleanup(func() { stop(); stopAllocator() })
	// The first run starts the browser, which lives as long as its context: no timeout.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// do runs browser steps, failing the test with what was being done.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserTimeout+30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs a browser action and returns its value, failing the test with what was
// being done.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserTimeout+30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// dark switches the page's prefers-color-scheme.
func dark(t *testing.T, ctx context.Context, on bool) {
	t.Helper()
	scheme := "light"
	if on {
		scheme = "dark"
	}
	do(t, ctx, "prefer "+scheme, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	}))
}

// maxScreenshot is the largest screenshot the docs take.
const maxScreenshot = 300 << 10

// screenshot saves the window as name in -screenshots (or the test's temporary
// directory), failing the test if it is over maxScreenshot.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	dir := *screenshots
	if dir == "" {
		dir = t.TempDir()
	}
	if len(png) > maxScreenshot {
		t.Errorf("screenshot %s is %d bytes, want at most %d", name, len(png), maxScreenshot)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s: %d bytes", name, len(png))
}

// explainVerdict is what muster explain, reading the API server, says of a group.
func explainVerdict(t *testing.T, env *sandboxtest.Env, ns, name string) explain.Verdict {
	t.Helper()
	f, err := explain.Gather(context.Background(), explain.Clients{Kube: env.Kube, Dynamic: env.Dynamic}, "podgroup/"+name, ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return explain.Build(f).Verdict
}

// boundNodes returns the nodes job's pods are bound to, sorted.
func boundNodes(t *testing.T, env *sandboxtest.Env, ns, job string) []string {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: musterv1alpha1.CoschedulingPodGroupLabel + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			out = append(out, p.Spec.NodeName)
		}
	}
	sort.Strings(out)
	return out
}

// createQueue creates a Queue for namespace ns with a quota of gpus GPUs and deletes it when the test
// ends.
func createQueue(t *testing.T, env *sandboxtest.Env, ns string, gpus int64) string {
	t.Helper()
	q := &musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "dash-team"},
		Spec: musterv1alpha1.QueueSpec{
			Quota: corev1.ResourceList{sandbox.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
			// A Queue admits only the namespaces its selector selects.
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		}}
	obj, err := toUnstructured(q, musterv1alpha1.GroupVersion.String(), "Queue")
	if err != nil {
		t.Fatal(err)
	}
	queues := env.Dynamic.Resource(musterv1alpha1.GroupVersion.WithResource("queues"))
	if _, err := queues.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Queue %s: %v", q.Name, err)
	}
	t.Cleanup(func() { _ = queues.Delete(context.Background(), q.Name, metav1.DeleteOptions{}) })
	return q.Name
}

// createQueueless creates a PodGroup in the default queue.
func createQueueless(t *testing.T, env *sandboxtest.Env, ns, name string, minMember int64) {
	t.Helper()
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": spv1alpha1.GroupVersion.String(), "kind": "PodGroup",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"minMember": minMember},
	}}
	if _, err := env.Dynamic.Resource(spv1alpha1.GroupVersion.WithResource("podgroups")).Namespace(ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup %s/%s: %v", ns, name, err)
	}
}

func createPodGroup(t *testing.T, env *sandboxtest.Env, ns, name, queue string, minMember int64) {
	t.Helper()
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": spv1alpha1.GroupVersion.String(), "kind": "PodGroup",
		"metadata": map[string]any{"name": name, "namespace": ns, "annotations": map[string]any{musterv1alpha1.QueueAnnotation: queue}},
		"spec":     map[string]any{"minMember": minMember},
	}}
	if _, err := env.Dynamic.Resource(spv1alpha1.GroupVersion.WithResource("podgroups")).Namespace(ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup %s/%s: %v", ns, name, err)
	}
}

// worker is member i of job: one GPU, 20 s of training once Ready.
func worker(ns, job string, i int) *corev1.Pod {
	p := sandboxtest.Pod(ns, fmt.Sprintf("%s-worker-%d", job, i)).GPUs(1).SchedulerName("muster").
		Annotate(kubelet.AnnotationRunFor, "20s").Obj()
	p.Labels = map[string]string{musterv1alpha1.CoschedulingPodGroupLabel: job}
	return p
}
