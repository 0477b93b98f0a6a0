package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestMIGPartitionsPackByTheirCounters: two nodes, each with one GPU its driver
// publishes MIG-style (seven memory slices, shared by seven 1g, two 3g and one 7g
// partitions: gt.MIGSlices). A 3g partition runs on the first node, two 1g on the
// second. A pod asking for a 1g partition runs on the first, whose GPU has room for four
// 1g partitions left against the second's five, and leaves the second's room for a 3g.
// (Counted one by one, the first node had seven free 1g partitions and the second five,
// and the pod went to the second.)
func TestMIGPartitionsPackByTheirCounters(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "migpack", Count: 2, CPU: "16", Memory: "64Gi"})
	classes, slices := env.Kube.ResourceV1().DeviceClasses(), env.Kube.ResourceV1().ResourceSlices()
	for _, p := range gt.MIGProfiles {
		class := gt.MIGClass(p.Profile)
		class.ResourceVersion = ""
		if _, err := classes.Create(ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = classes.Delete(context.Background(), class.Name, metav1.DeleteOptions{}) })
	}
	for _, n := range nodes {
		for _, s := range gt.MIGSlices(n) {
			s.ResourceVersion = ""
			if _, err := slices.Create(ctx, s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = slices.Delete(context.Background(), s.Name, metav1.DeleteOptions{}) })
		}
	}
	startMuster(t, env, musterOptions{})
	logPodsOnFailure(t, env, ns)

	// start creates pod name with a claim of one partition of profile, on node if given;
	// running waits until it runs and returns its node.
	start := func(name, profile, node string) *corev1.Pod {
		claim := gt.MIGClaim(ns, name, profile)
		claim.ResourceVersion, claim.UID = "", ""
		if _, err := env.Kube.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := sandboxtest.Pod(ns, name).SchedulerName("muster").ResourceClaim("mig", name).Obj()
		if node != "" {
			pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		}
		return env.CreatePod(t, pod)
	}
	running := func(pod *corev1.Pod) string {
		return env.WaitForPod(t, pod, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }).Spec.NodeName
	}
	for _, p := range []*corev1.Pod{start("big", "3g", nodes[0]), start("small-0", "1g", nodes[1]), start("small-1", "1g", nodes[1])} {
		running(p)
	}
	if got := running(start("w", "1g", "")); got != nodes[0] {
		t.Errorf("pod w on %s, want %s, whose GPU has room for four 1g partitions left against %s's five", got, nodes[0], nodes[1])
	}
}
