package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// draPool is a pool of n nodes with gpus DRA GPUs each in NVLink domain clique, named
// for one test.
func draPool(name string, n, gpus int, clique string) sandbox.NodePool {
	return sandbox.NodePool{Name: name, Count: n, CPU: "16", Memory: "64Gi", DRAGPUs: gpus, Clique: clique}
}

// deviceSummary describes a device's name, attributes and capacity in one line.
func deviceSummary(d resourceapi.Device) string {
	str := func(n resourceapi.QualifiedName) string { return ptr.Deref(d.Attributes[n].StringValue, "<none>") }
	mem := d.Capacity[sandbox.CapacityMemory].Value
	return fmt.Sprintf("%s product=%q index=%d clique=%s memory=%s", d.Name, str(sandbox.AttributeProductName),
		ptr.Deref(d.Attributes[sandbox.AttributeIndex].IntValue, -1), str(sandbox.AttributeCliqueID), mem.String())
}

// TestDRAPresetPublishesSlicesAndDeviceClass: the nodes of the dra preset, created in
// the shared sandbox, have no nvidia.com/gpu and one ResourceSlice each of driver
// gpu.nvidia.com with 8 devices, in the node's NVLink domain; the DeviceClass selects
// the driver.
func TestDRAPresetPublishesSlicesAndDeviceClass(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ctx := context.Background()
	c, err := sandbox.Preset(sandbox.PresetDRA, sandbox.PresetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cliqueOf := map[string]string{}
	for _, p := range c.Pools {
		for _, n := range env.CreateNodes(t, p) {
			cliqueOf[n] = p.Clique
		}
	}
	if len(cliqueOf) != 16 {
		t.Fatalf("expected 16 nodes in the dra preset, found %d", len(cliqueOf))
	}
	slices, err := env.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, s := range slices.Items {
		node := ptr.Deref(s.Spec.NodeName, "")
		clique, ours := cliqueOf[node]
		if !ours {
			continue // another test's nodes
		}
		found++
		if s.Spec.Driver != sandbox.DRADriver || s.Spec.Pool != (resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}) {
			t.Errorf("slice %s: expected driver %s, pool %s generation 1 of 1 slice; found %s, %+v", s.Name, sandbox.DRADriver, node, s.Spec.Driver, s.Spec.Pool)
		}
		var got, want []string
		for i, d := range s.Spec.Devices {
			got = append(got, deviceSummary(d))
			want = append(want, fmt.Sprintf("gpu-%d product=%q index=%d clique=%s memory=80Gi", i, sandbox.DefaultDRAProduct, i, clique))
		}
		if len(want) != 8 {
			t.Errorf("slice %s: expected 8 devices, found %d", s.Name, len(want))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("slice %s devices (-want +got):\n%s", s.Name, diff)
		}
	}
	if found != 16 {
		t.Errorf("expected 16 slices of the preset's nodes, found %d", found)
	}
	for name, clique := range cliqueOf {
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if q, has := n.Status.Allocatable[sandbox.ResourceGPU]; has || n.Labels[sandbox.LabelGPUClique] != clique {
			t.Errorf("node %s: expected no %s and label %s=%s, found %s and %q", name, sandbox.ResourceGPU, sandbox.LabelGPUClique, clique, q.String(), n.Labels[sandbox.LabelGPUClique])
		}
	}
	dc, err := env.Kube.ResourceV1().DeviceClasses().Get(ctx, sandbox.DeviceClassGPU, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := dc.Spec.Selectors; len(s) != 1 || s[0].CEL == nil || s[0].CEL.Expression != `device.driver == "gpu.nvidia.com"` {
		t.Errorf("DeviceClass %s: expected one CEL selector of the driver, found %+v", dc.Name, s)
	}
}

// TestResourceSliceFollowsItsNode: a node's slice goes with the node; it is rewritten,
// in a new pool generation, when the node's DRA annotations change; a node whose DRA
// annotation is malformed gets a Warning event naming it and no slice.
func TestResourceSliceFollowsItsNode(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ctx := context.Background()
	nodes := env.CreateNodes(t, draPool("slicegone", 2, 4, ""))
	if err := env.Kube.CoreV1().Nodes().Delete(ctx, nodes[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "the slice of "+nodes[0]+" gone with its node", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.ResourceV1().ResourceSlices().Get(ctx, sandbox.ResourceSliceName(nodes[0]), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	annotate := func(key, value string) {
		t.Helper()
		n, err := env.Kube.CoreV1().Nodes().Get(ctx, nodes[1], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Annotations[key] = value
		if _, err := env.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	annotate(sandbox.AnnotationDRAProduct, "NVIDIA A100-SXM4-80GB")
	env.WaitFor(t, "the slice of "+nodes[1]+" rewritten for the new product in generation 2", func(ctx context.Context) (bool, error) {
		s, err := env.Kube.ResourceV1().ResourceSlices().Get(ctx, sandbox.ResourceSliceName(nodes[1]), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Spec.Pool.Generation == 2 && len(s.Spec.Devices) == 4 &&
			*s.Spec.Devices[3].Attributes[sandbox.AttributeProductName].StringValue == "NVIDIA A100-SXM4-80GB", nil
	})
	annotate(sandbox.AnnotationDRAGPUs, "lots")
	env.WaitForEvent(t, "default", nodes[1], "InvalidSandboxAnnotation", `annotation sandbox.muster.dev/dra-gpus: expected a number of GPUs from 1 to 128, found "lots"`)
	env.WaitFor(t, "the slice of "+nodes[1]+" withdrawn", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.ResourceV1().ResourceSlices().Get(ctx, sandbox.ResourceSliceName(nodes[1]), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// generatedClaim waits until the resourceclaim controller has made the claim of pod's
// claim podClaim from its template and named it in the pod's status, and returns it.
func generatedClaim(t *testing.T, env *sandboxtest.Env, pod *v1.Pod, podClaim string) *resourceapi.ResourceClaim {
	t.Helper()
	var name string
	env.WaitForPod(t, pod, "given a claim for "+podClaim, func(p *v1.Pod) bool {
		for _, s := range p.Status.ResourceClaimStatuses {
			if s.Name == podClaim && s.ResourceClaimName != nil {
				name = *s.ResourceClaimName
				return true
			}
		}
		return false
	})
	claim, err := env.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim %s named in pod %s's status: %v", name, pod.Name, err)
	}
	return claim
}

// TestClaimTemplateBecomesClaimAndPodRunsOnceAllocated: the resourceclaim controller
// makes a pod's claim from its template; the kubelet keeps the bound pod Pending with a
// FailedPrepareDynamicResources event until the claim is allocated on the pod's node
// and reserved for it, then runs it; deleting the pod deletes its claim.
func TestClaimTemplateBecomesClaimAndPodRunsOnceAllocated(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	nodes := env.CreateNodes(t, draPool("template", 1, 8, "clique-t"))
	if _, err := env.Kube.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, sandboxtest.GPUClaimTemplate(ns, "one-gpu", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").ResourceClaimTemplate("gpu", "one-gpu").Obj())
	claim := generatedClaim(t, env, pod, "gpu")
	if ref := metav1.GetControllerOf(claim); ref == nil || ref.Kind != "Pod" || ref.UID != pod.UID || !strings.HasPrefix(claim.Name, "worker-0-gpu-") {
		t.Errorf("claim %s: expected worker-0-gpu-… controlled by the pod, found controller %+v", claim.Name, ref)
	}

	env.Bind(t, pod, nodes[0])
	env.WaitForEvent(t, ns, pod.Name, kubelet.ReasonFailedPrepareDynamicResources,
		fmt.Sprintf("Failed to prepare dynamic resources: pod worker-0 (%s) is not allowed to use ResourceClaim %s", pod.UID, claim.Name))
	got := env.WaitForPod(t, pod, "admitted and Pending", func(p *v1.Pod) bool { return p.Status.StartTime != nil })
	if got.Status.Phase != v1.PodPending || got.Status.ContainerStatuses[0].State.Waiting == nil {
		t.Errorf("expected Pending, the container waiting, found phase %s state %+v", got.Status.Phase, got.Status.ContainerStatuses[0].State)
	}

	env.Allocate(t, ns, claim.Name, sandboxtest.Allocation(nodes[0], "gpu-3"), sandboxtest.PodConsumer(pod))
	env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)

	if err := env.Kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitForResourceClaim(t, ns, claim.Name, "deleted with its pod", func(c *resourceapi.ResourceClaim) bool { return c == nil })
}

// TestKubeletRefusesClaimNotForItsNode: a claim the pod names that does not exist, a
// claim reserved for the pod but allocated for another node, and one allocated on a
// device the node does not have each keep the pod Pending (admitted, containers
// creating) with an event naming the claim.
func TestKubeletRefusesClaimNotForItsNode(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	nodes := env.CreateNodes(t, draPool("wrongnode", 2, 2, ""))
	for _, tc := range []struct {
		claim string
		alloc *resourceapi.AllocationResult // nil: no claim made
		want  string
	}{
		{"missing", nil, `fetch ResourceClaim missing: resourceclaims.resource.k8s.io "missing" not found`},
		{"elsewhere", sandboxtest.Allocation(nodes[1], "gpu-0"),
			"NodePrepareResources failed for ResourceClaim elsewhere: it is allocated for other nodes (its allocation's nodeSelector does not select node " + nodes[0] + ")"},
		{"nodevice", sandboxtest.Allocation(nodes[0], "gpu-7"),
			"NodePrepareResources failed for ResourceClaim nodevice: device gpu.nvidia.com/" + nodes[0] + "/gpu-7 not found on node " + nodes[0]},
	} {
		pod := env.CreatePod(t, sandboxtest.Pod(ns, "pod-"+tc.claim).ResourceClaim("gpu", tc.claim).Obj())
		if tc.alloc != nil {
			if _, err := env.Kube.ResourceV1().ResourceClaims(ns).Create(ctx, sandboxtest.GPUClaim(ns, tc.claim, 1), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			env.Allocate(t, ns, tc.claim, tc.alloc, sandboxtest.PodConsumer(pod))
		}
		env.Bind(t, pod, nodes[0])
		env.WaitForEvent(t, ns, pod.Name, kubelet.ReasonFailedPrepareDynamicResources, "Failed to prepare dynamic resources: "+tc.want)
		got := env.WaitForPod(t, pod, "admitted and Pending", func(p *v1.Pod) bool { return p.Status.StartTime != nil })
		if got.Status.Phase != v1.PodPending || got.Status.ContainerStatuses[0].State.Waiting == nil {
			t.Errorf("pod %s: expected Pending, its container waiting, found phase %s state %+v", pod.Name, got.Status.Phase, got.Status.ContainerStatuses[0].State)
		}
	}
}

// TestDeletedPodReleasesNamedClaim: a claim the test made, allocated and reserved for a
// pod that runs, is unreserved and deallocated by the resourceclaim controller once the
// pod is deleted, and kept (it is not the pod's) without the delete-protection
// finalizer.
func TestDeletedPodReleasesNamedClaim(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	nodes := env.CreateNodes(t, draPool("release", 1, 8, ""))
	if _, err := env.Kube.ResourceV1().ResourceClaims(ns).Create(ctx, sandboxtest.GPUClaim(ns, "two", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").ResourceClaim("gpus", "two").Obj())
	env.Allocate(t, ns, "two", sandboxtest.Allocation(nodes[0], "gpu-0", "gpu-1"), sandboxtest.PodConsumer(pod))
	env.Bind(t, pod, nodes[0])
	env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)

	if err := env.Kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller clears the status, then removes the finalizer it no longer needs.
	env.WaitForResourceClaim(t, ns, "two", "unreserved, deallocated and without finalizer", func(c *resourceapi.ResourceClaim) bool {
		return c != nil && len(c.Status.ReservedFor) == 0 && c.Status.Allocation == nil && len(c.Finalizers) == 0
	})
}

// TestPodGroupClaimIsSharedByItsPods: with DRAWorkloadResourceClaims, a native PodGroup
// keeps spec.resourceClaims; the controller makes one claim for the PodGroup from the
// template, names it in the pod's status too, and a pod of the group runs once the
// claim is allocated and reserved for the PodGroup.
func TestPodGroupClaimIsSharedByItsPods(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	nodes := env.CreateNodes(t, draPool("groupclaim", 1, 8, "clique-g"))
	if _, err := env.Kube.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, sandboxtest.GPUClaimTemplate(ns, "domain", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pg, err := env.Kube.SchedulingV1beta1().PodGroups(ns).Create(ctx, &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}},
			ResourceClaims:   []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("domain")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Spec.ResourceClaims) != 1 {
		t.Fatalf("expected the API server to keep the PodGroup's resourceClaims (DRAWorkloadResourceClaims on), found %+v", pg.Spec.ResourceClaims)
	}
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "job-0").PodGroup("job").ResourceClaimTemplate("gpus", "domain").Obj())
	claim := generatedClaim(t, env, pod, "gpus")
	if ref := metav1.GetControllerOf(claim); ref == nil || ref.Kind != "PodGroup" || ref.UID != pg.UID {
		t.Errorf("claim %s: expected it controlled by PodGroup job, found %+v", claim.Name, ref)
	}
	env.Bind(t, pod, nodes[0])
	env.WaitForEvent(t, ns, pod.Name, kubelet.ReasonFailedPrepareDynamicResources, "is not allowed to use ResourceClaim "+claim.Name)
	group := resourceapi.ResourceClaimConsumerReference{APIGroup: schedulingv1beta1.GroupName, Resource: "podgroups", Name: pg.Name, UID: pg.UID}
	env.Allocate(t, ns, claim.Name, sandboxtest.Allocation(nodes[0], "gpu-0", "gpu-1"), group)
	env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)
}

func TestDRAPresetAndKnobs(t *testing.T) {
	c, err := sandbox.Preset(sandbox.PresetDRA, sandbox.PresetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	perClique := map[string]int{}
	for _, n := range nodes {
		if _, has := n.Status.Capacity[sandbox.ResourceGPU]; has || n.Annotations[sandbox.AnnotationDRAGPUs] != "8" {
			t.Errorf("node %s: expected 8 DRA GPUs and no %s, found annotations %v capacity %v", n.Name, sandbox.ResourceGPU, n.Annotations, n.Status.Capacity)
		}
		perClique[n.Labels[sandbox.LabelGPUClique]]++
	}
	if diff := cmp.Diff(map[string]int{"clique-a": 8, "clique-b": 8}, perClique); diff != "" {
		t.Errorf("nodes per clique (-want +got):\n%s", diff)
	}
	if nodes[0].Name != "dra-a-0" || nodes[15].Name != "dra-b-7" {
		t.Errorf("expected nodes dra-a-0 … dra-b-7, found %s … %s", nodes[0].Name, nodes[15].Name)
	}

	big, err := sandbox.Preset(sandbox.PresetDRA, sandbox.PresetOptions{DRANodes: 1000, DRAGPUs: 4, DRACliques: 30})
	if err != nil {
		t.Fatal(err)
	}
	last := big.Pools[len(big.Pools)-1]
	if big.NodeCount() != 1000 || len(big.Pools) != 30 || last.Clique != "clique-ad" || last.DRAGPUs != 4 || big.Pools[0].Count != 33 {
		t.Errorf("expected 1,000 nodes of 4 GPUs in 30 cliques (first 33 nodes, last clique-ad), found %d in %d, last %s of %d GPUs, first %d",
			big.NodeCount(), len(big.Pools), last.Clique, last.DRAGPUs, big.Pools[0].Count)
	}
}

func TestDRAKnobsRejectBadValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		build   func() error
		wantErr string
	}{
		{"no nodes", func() error { _, err := sandbox.DRACluster(0, 8, 1); return err }, "dra nodes: expected at least 1, found 0"},
		{"no gpus", func() error { _, err := sandbox.DRACluster(4, 0, 1); return err }, "dra gpus: expected at least 1 GPU per node, found 0"},
		{"too many cliques", func() error { _, err := sandbox.DRACluster(4, 8, 5); return err }, "dra cliques: expected from 1 to the node count 4, found 5"},
		{"too many gpus", func() error { _, err := sandbox.DRACluster(4, 129, 1); return err }, "pools[0].draGPUs: expected at most 128"},
		{"both kinds", func() error {
			_, err := sandbox.ParseCluster([]byte(`pools: [{name: a, count: 1, cpu: "1", memory: 1Gi, gpus: 8, draGPUs: 8}]`))
			return err
		}, "pools[0].draGPUs: expected no DRA GPUs in a pool with gpus (8 nvidia.com/gpu), found 8"},
		{"clique without gpus", func() error {
			_, err := sandbox.ParseCluster([]byte(`pools: [{name: a, count: 1, cpu: "1", memory: 1Gi, clique: x}]`))
			return err
		}, `pools[0].clique: expected only with draGPUs, found "x" in a pool without DRA GPUs`},
		{"bad memory", func() error {
			_, err := sandbox.ParseCluster([]byte(`pools: [{name: a, count: 1, cpu: "1", memory: 1Gi, draGPUs: 1, draMemory: lots}]`))
			return err
		}, `pools[0].draMemory: expected a quantity such as "64" or "512Gi", found "lots"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.build(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("expected an error containing %q, found %v", tc.wantErr, err)
			}
		})
	}
}
