package upstreamtest

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nodeaffinity "k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// wholeNodeTemplate asks for all 8 GPUs of one node by the attributes and capacity
// the sandbox's driver publishes: product name and memory in the selector, and one
// NVLink domain (matchAttribute cliqueID).
func wholeNodeTemplate(ns string) *resourceapi.ResourceClaimTemplate {
	tmpl := sandboxtest.GPUClaimTemplate(ns, "whole-node", 8)
	spec := &tmpl.Spec.Spec.Devices
	spec.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: `device.attributes["gpu.nvidia.com"].productName == "` + sandbox.DefaultDRAProduct + `" && ` +
			`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0`,
	}}}
	clique := resourceapi.FullyQualifiedName(sandbox.DRADriver + "/" + string(sandbox.AttributeCliqueID))
	spec.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &clique}}
	return tmpl
}

// TestUpstreamSchedulerAllocatesSandboxDevices: kube-scheduler allocates pods'
// claims, made from a template by the sandbox's resourceclaim controller, from the
// devices the sandbox's driver publishes, with a selector on their attributes and
// capacity and a matchAttribute constraint; the simulated kubelet accepts its
// allocations and runs the pods, one per node (8 GPUs each); a fifth pod waits for
// devices until one of the four is deleted, whose claim is then released.
func TestUpstreamSchedulerAllocatesSandboxDevices(t *testing.T) {
	env := sandboxtest.Shared(t)
	startScheduler(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	if _, err := env.Kube.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, wholeNodeTemplate(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newPod := func(name string) *v1.Pod {
		return env.CreatePod(t, sandboxtest.Pod(ns, name).SchedulerName(schedulerName).ResourceClaimTemplate("gpus", "whole-node").Obj())
	}
	var pods []*v1.Pod
	for i := range 4 {
		pods = append(pods, newPod(fmt.Sprintf("worker-%d", i)))
	}
	used := map[string]bool{}
	var nodeOf []string
	for _, pod := range pods {
		got := env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)
		node, err := env.Kube.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if used[node.Name] {
			t.Errorf("pod %s: expected a node of its own (8 GPUs each), found %s taken", pod.Name, node.Name)
		}
		used[node.Name] = true
		nodeOf = append(nodeOf, node.Name)
		checkAllocation(t, claimOf(t, env, got), node, got)
	}

	late := newPod("worker-4")
	env.WaitForPod(t, late, "unschedulable", func(p *v1.Pod) bool {
		return sandboxtest.PodCondition(p, v1.PodScheduled) == v1.ConditionFalse
	})
	first := claimOf(t, env, pods[0])
	if err := env.Kube.CoreV1().Pods(ns).Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitForResourceClaim(t, ns, first.Name, "deleted with its pod", func(c *resourceapi.ResourceClaim) bool { return c == nil })
	got := env.WaitForPod(t, late, "Ready on the freed node", sandboxtest.PodReady)
	if got.Spec.NodeName != nodeOf[0] {
		t.Errorf("expected the late pod on %s, the node of the deleted pod (the others are full), found %q", nodeOf[0], got.Spec.NodeName)
	}
}

// claimOf is the ResourceClaim the controller made for pod's one claim.
func claimOf(t *testing.T, env *sandboxtest.Env, pod *v1.Pod) *resourceapi.ResourceClaim {
	t.Helper()
	got := env.WaitForPod(t, pod, "given its claim", func(p *v1.Pod) bool {
		return len(p.Status.ResourceClaimStatuses) == 1 && p.Status.ResourceClaimStatuses[0].ResourceClaimName != nil
	})
	claim, err := env.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(context.Background(), *got.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return claim
}

// checkAllocation checks that claim is allocated 8 devices of node's pool, for node,
// and reserved for pod.
func checkAllocation(t *testing.T, claim *resourceapi.ResourceClaim, node *v1.Node, pod *v1.Pod) {
	t.Helper()
	a := claim.Status.Allocation
	if a == nil || len(a.Devices.Results) != 8 {
		t.Fatalf("claim %s: expected 8 devices allocated, found %+v", claim.Name, a)
	}
	for _, r := range a.Devices.Results {
		if r.Driver != sandbox.DRADriver || r.Pool != node.Name {
			t.Errorf("claim %s: expected devices of pool %s of %s, found %+v", claim.Name, node.Name, sandbox.DRADriver, r)
		}
	}
	sel, err := nodeaffinity.NewNodeSelector(a.NodeSelector)
	if err != nil || !sel.Match(node) {
		t.Errorf("claim %s: expected an allocation for node %s, found nodeSelector %+v (%v)", claim.Name, node.Name, a.NodeSelector, err)
	}
	if r := claim.Status.ReservedFor; len(r) != 1 || r[0].UID != pod.UID {
		t.Errorf("claim %s: expected reserved for pod %s, found %+v", claim.Name, pod.Name, r)
	}
}

// TestUpstreamSchedulerAllocatesPodGroupClaim: with DRAWorkloadResourceClaims, a
// native PodGroup's claim (made once for the group by the resourceclaim controller) is
// allocated by kube-scheduler's gang scheduling, reserved for the PodGroup, and both
// members run on the node of its devices, which the simulated kubelet accepts; the
// claim is deleted with the PodGroup.
func TestUpstreamSchedulerAllocatesPodGroupClaim(t *testing.T) {
	env := sandboxtest.Shared(t)
	startScheduler(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	if _, err := env.Kube.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, sandboxtest.GPUClaimTemplate(ns, "two-gpus", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pg, err := env.Kube.SchedulingV1beta1().PodGroups(ns).Create(ctx, &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}},
			ResourceClaims:   []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("two-gpus")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*v1.Pod
	for _, name := range []string{"job-0", "job-1"} {
		pods = append(pods, env.CreatePod(t, sandboxtest.Pod(ns, name).SchedulerName(schedulerName).PodGroup(pg.Name).ResourceClaimTemplate("gpus", "two-gpus").Obj()))
	}
	var claims, nodes []string
	for _, pod := range pods {
		got := env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)
		nodes = append(nodes, got.Spec.NodeName)
		claims = append(claims, claimOf(t, env, got).Name)
	}
	if claims[0] != claims[1] || nodes[0] != nodes[1] {
		t.Fatalf("expected both members to share one claim on one node, found claims %v on nodes %v", claims, nodes)
	}
	claim := claimOf(t, env, pods[0])
	if ref := metav1.GetControllerOf(claim); ref == nil || ref.Kind != "PodGroup" || ref.UID != pg.UID {
		t.Errorf("claim %s: expected it controlled by PodGroup job, found %+v", claim.Name, ref)
	}
	if r := claim.Status.ReservedFor; len(r) != 1 || r[0].Resource != "podgroups" || r[0].UID != pg.UID {
		t.Errorf("claim %s: expected reserved for PodGroup job, found %+v", claim.Name, r)
	}
	a := claim.Status.Allocation
	if a == nil || len(a.Devices.Results) != 2 || a.Devices.Results[0].Pool != nodes[0] {
		t.Errorf("claim %s: expected 2 devices of %s allocated, found %+v", claim.Name, nodes[0], a)
	}

	// The group's claim goes with the group (its pods first: the PodGroup waits for them).
	for _, pod := range pods {
		if err := env.Kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Kube.SchedulingV1beta1().PodGroups(ns).Delete(ctx, pg.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitForResourceClaim(t, ns, claim.Name, "deleted with its PodGroup", func(c *resourceapi.ResourceClaim) bool { return c == nil })
}
