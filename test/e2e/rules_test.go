package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

const jobNameLabel = "training.kubeflow.org/job-name"

// onePerNode gives a job's pods required anti-affinity to each other by hostname, as
// MPI and NCCL jobs ask for one worker per node.
func onePerNode(job string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{jobNameLabel: job}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
	}
}

// affineTo gives a job's pods required pod affinity to each other by key: the gang
// must run within one value of it, as jobs that want one rack or zone ask.
func affineTo(job, key string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{jobNameLabel: job}},
				TopologyKey:   key,
			}},
		}}
	}
}

// nodesOfJob returns the nodes a job's pods are bound to, with how many pods each.
func nodesOfJob(t *testing.T, env *sandboxtest.Env, ns, job string) map[string]int {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: jobNameLabel + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

// TestOnePerNodeGangOnTheSandbox: a 4-pod gang with one-per-node anti-affinity on 4
// eight-GPU nodes lands on 4 nodes (muster's packing alone would put it on one), and a
// 5-pod one is Impossible with kube-scheduler's reason.
func TestOnePerNodeGangOnTheSandbox(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "anti", Count: 4, CPU: "32", Memory: "128Gi", GPUs: 8})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	spread := pytorchJob{ns: ns, name: "spread", workers: 3, mutate: onePerNode("spread")}
	spread.create(t, env, c)
	env.WaitFor(t, "the one-per-node gang bound", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "spread").holding == 4, nil
	})
	if got := nodesOfJob(t, env, ns, "spread"); len(got) != 4 {
		t.Fatalf("one-per-node gang on %v, want 4 nodes", got)
	}
	wide := pytorchJob{ns: ns, name: "wide", workers: 4, mutate: onePerNode("wide")}
	wide.create(t, env, c)
	cond := waitCondition(t, env, c, ns, "wide", "Impossible", metav1.ConditionTrue)
	if want := "didn't match pod anti-affinity rules"; !strings.Contains(cond.Message, want) {
		t.Fatalf("Impossible message %q, want it to contain %q", cond.Message, want)
	}
	if got := stateOf(t, env, ns, "wide").holding; got != 0 {
		t.Fatalf("the Impossible gang holds %d pods", got)
	}
	f, err := explain.Gather(context.Background(), explain.NewClients(env.Kube, env.Dynamic), "podgroup/wide", ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	report := explain.Build(f)
	var text strings.Builder
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("muster explain podgroup/wide:\n%s", text.String())
	v := report.Verdict
	if v.Step != 4 || !strings.Contains(v.Summary, "didn't match pod anti-affinity rules") || !strings.Contains(v.Fix, "pod affinity or anti-affinity") {
		t.Fatalf("explain podgroup/wide: verdict %+v, want step 4 naming the anti-affinity rule and its fix", v)
	}
}

// TestHostPortGangWaitsForThePort: a gang whose 3 pods use host port 29500 on 3 nodes,
// one of which runs another pod on that port, waits Unschedulable naming the ports,
// holding nothing, and runs on 3 nodes once the port is free.
func TestHostPortGangWaitsForThePort(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "port", Count: 3, CPU: "32", Memory: "128Gi", GPUs: 8})
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, "port") && (first == "" || n.Name < first) {
			first = n.Name
		}
	}
	hostPort := func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 29500, HostPort: 29500, Protocol: corev1.ProtocolTCP})
	}
	holder := sandboxtest.Pod(ns, "holder").Obj()
	holder.Spec.NodeName = first
	hostPort(holder)
	env.CreatePod(t, holder)
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	job := pytorchJob{ns: ns, name: "rdzv", workers: 2, mutate: hostPort}
	job.create(t, env, c)
	cond := waitCondition(t, env, c, ns, "rdzv", "Unschedulable", metav1.ConditionTrue)
	if want := "didn't have free ports for the requested pod ports"; !strings.Contains(cond.Message, want) {
		t.Fatalf("Unschedulable message %q, want it to contain %q", cond.Message, want)
	}
	if got := stateOf(t, env, ns, "rdzv").holding; got != 0 {
		t.Fatalf("the waiting gang holds %d pods", got)
	}
	if err := env.Kube.CoreV1().Pods(ns).Delete(context.Background(), "holder", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "the host-port gang bound", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "rdzv").holding == 3, nil
	})
	if got := nodesOfJob(t, env, ns, "rdzv"); len(got) != 3 {
		t.Fatalf("host-port gang on %v, want 3 nodes", got)
	}
}

// zonesOfJob returns how many of a job's bound pods each zone has.
func zonesOfJob(t *testing.T, env *sandboxtest.Env, ns, job string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for name, n := range nodesOfJob(t, env, ns, job) {
		node, err := env.Kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[node.Labels[corev1.LabelTopologyZone]] += n
	}
	return out
}

// TestSpreadAndAffinityOnTheSandbox: a 4-pod gang with a hard zone spread of maxSkew 1
// lands 2 and 2 in two zones, although one zone has room for all; a 2-pod gang with
// required pod affinity to a cache pod's zone lands in that zone.
func TestSpreadAndAffinityOnTheSandbox(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "zoned", Count: 4, CPU: "32", Memory: "128Gi", GPUs: 8, Zones: 2})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	spread := pytorchJob{ns: ns, name: "spread", workers: 3, mutate: func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{jobNameLabel: "spread"}},
		}}
	}}
	spread.create(t, env, c)
	env.WaitFor(t, "the spread gang bound", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "spread").holding == 4, nil
	})
	if got := zonesOfJob(t, env, ns, "spread"); len(got) != 2 || got[firstKey(got)] != 2 {
		t.Fatalf("spread gang by zone %v, want 2 and 2", got)
	}

	// The cache runs in the zone of the spread gang's last node (any zone would do).
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cacheNode, cacheZone string
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, "zoned") && n.Name > cacheNode {
			cacheNode, cacheZone = n.Name, n.Labels[corev1.LabelTopologyZone]
		}
	}
	cache := sandboxtest.Pod(ns, "cache").Obj()
	cache.Labels = map[string]string{"app": "dataset-cache"}
	cache.Spec.NodeName = cacheNode
	env.CreatePod(t, cache)
	near := pytorchJob{ns: ns, name: "near", workers: 1, mutate: func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dataset-cache"}},
				TopologyKey:   corev1.LabelTopologyZone,
			}},
		}}
	}}
	near.create(t, env, c)
	env.WaitFor(t, "the affine gang bound", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "near").holding == 2, nil
	})
	if got := zonesOfJob(t, env, ns, "near"); got[cacheZone] != 2 {
		t.Fatalf("affine gang by zone %v, want both in the cache's zone %s", got, cacheZone)
	}
}

// TestSelfAffineGangOnTheSandbox: racks r0 and r1 of two 2-GPU nodes each, a job on one
// GPU of r0; a gang of four 1-GPU pods that require each other in one rack runs in r1,
// where all four fit, though the tightest node for its first pod is in r0.
func TestSelfAffineGangOnTheSandbox(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	pool := "selfaff"
	env.CreateNodes(t, sandbox.NodePool{Name: pool, Count: 4, CPU: "16", Memory: "64Gi", GPUs: 2, Racks: 2})
	c := newClient(t, env.Config)
	startMuster(t, env, musterOptions{})
	busy := pytorchJob{ns: ns, name: "busy", mutate: func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: pool + "-0"}
	}}
	runReady(t, env, c, busy)
	gang := pytorchJob{ns: ns, name: "gang", workers: 3, mutate: affineTo("gang", sandbox.LabelRack)}
	gang.create(t, env, c)
	env.WaitFor(t, "the self-affine gang bound", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "gang").holding == 4, nil
	})
	racks := map[string]int{}
	for name, n := range nodesOfJob(t, env, ns, "gang") {
		node, err := env.Kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		racks[node.Labels[sandbox.LabelRack]] += n
	}
	busyNode, err := env.Kube.CoreV1().Nodes().Get(context.Background(), pool+"-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(racks) != 1 || racks[busyNode.Labels[sandbox.LabelRack]] != 0 {
		t.Fatalf("self-affine gang by rack %v, want all 4 in the rack without %s-0 (%s)", racks, pool, busyNode.Labels[sandbox.LabelRack])
	}
}

func firstKey(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}
