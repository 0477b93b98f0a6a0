package sandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

func TestStorageClassesAndCSIDriverAreInstalled(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ctx := context.Background()
	for name, mode := range map[string]storagev1.VolumeBindingMode{
		sandbox.StorageClassLocal:    storagev1.VolumeBindingWaitForFirstConsumer,
		sandbox.StorageClassStandard: storagev1.VolumeBindingImmediate,
	} {
		sc, err := env.Kube.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Provisioner != sandbox.StorageDriver || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != mode ||
			sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != v1.PersistentVolumeReclaimDelete {
			t.Errorf("StorageClass %s: expected provisioner %s, binding mode %s, reclaim Delete; found %s, %v, %v",
				name, sandbox.StorageDriver, mode, sc.Provisioner, sc.VolumeBindingMode, sc.ReclaimPolicy)
		}
	}
	d, err := env.Kube.StorageV1().CSIDrivers().Get(ctx, sandbox.StorageDriver, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.AttachRequired == nil || *d.Spec.AttachRequired {
		t.Errorf("CSIDriver %s: expected attachRequired false, found %v", d.Name, d.Spec.AttachRequired)
	}
}

// TestCSINodeForEveryNode: every node, the preset's and one made later, has a CSINode
// with the driver's allocatable count and topology keys; it goes with its node.
func TestCSINodeForEveryNode(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	zoned := sandbox.NodePool{Name: "csinode", Count: 2, CPU: "8", Memory: "32Gi", Zones: 2}
	added := env.CreateNodes(t, zoned)
	// The preset's nodes and this test's (other tests' nodes come and go).
	nodes, err := env.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: sandbox.LabelPool + " in (gpu, csinode)"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 10 {
		t.Fatalf("expected 8 seed nodes and 2 of the test's, found %d", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		wantKeys := []string{v1.LabelHostname}
		if n.Labels[v1.LabelTopologyZone] != "" {
			wantKeys = append(wantKeys, v1.LabelTopologyZone)
		}
		env.WaitFor(t, "CSINode "+n.Name+" with the driver, 16 volumes, keys "+strings.Join(wantKeys, ","), func(ctx context.Context) (bool, error) {
			c, err := env.Kube.StorageV1().CSINodes().Get(ctx, n.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			} else if err != nil {
				return false, err
			}
			if len(c.Spec.Drivers) != 1 {
				return false, nil
			}
			d := c.Spec.Drivers[0]
			return d.Name == sandbox.StorageDriver && d.NodeID == n.Name && d.Allocatable != nil && d.Allocatable.Count != nil &&
				*d.Allocatable.Count == sandbox.DefaultVolumeLimit && strings.Join(d.TopologyKeys, ",") == strings.Join(wantKeys, ","), nil
		})
	}
	if err := env.Kube.CoreV1().Nodes().Delete(context.Background(), added[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, "CSINode "+added[0]+" gone with its node", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.StorageV1().CSINodes().Get(ctx, added[0], metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestStandardClaimIsProvisionedAtOnce: a claim of the Immediate class is provisioned
// and bound with no pod; deleting it deletes its volume (reclaim policy Delete).
func TestStandardClaimIsProvisionedAtOnce(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	claim := env.CreateClaim(t, sandboxtest.Claim(ns, "data", sandbox.StorageClassStandard, "2Gi").Obj())
	got := env.WaitForClaim(t, ns, claim.Name, "Bound", sandboxtest.ClaimBound)
	pv := getVolume(t, env, got.Spec.VolumeName)
	if pv.Name != "pvc-"+string(claim.UID) || pv.Annotations[volumehelpers.AnnDynamicallyProvisioned] != sandbox.StorageDriver {
		t.Errorf("volume %s: expected pvc-%s provisioned by %s, found annotations %v", pv.Name, claim.UID, sandbox.StorageDriver, pv.Annotations)
	}
	size := pv.Spec.Capacity[v1.ResourceStorage]
	if size.Cmp(resource.MustParse("2Gi")) != 0 || pv.Spec.StorageClassName != sandbox.StorageClassStandard ||
		pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || pv.Spec.NodeAffinity != nil {
		t.Errorf("volume %s: expected 2Gi of %s, reclaim Delete, no node affinity; found %s, %s, %s, %v", pv.Name,
			sandbox.StorageClassStandard, size.String(), pv.Spec.StorageClassName, pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.NodeAffinity)
	}
	if csi := pv.Spec.CSI; csi == nil || csi.Driver != sandbox.StorageDriver || csi.VolumeHandle != pv.Name {
		t.Errorf("volume %s: expected a csi source of %s with handle %s, found %+v", pv.Name, sandbox.StorageDriver, pv.Name, pv.Spec.CSI)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != claim.UID || pv.Status.Phase != v1.VolumeBound {
		t.Errorf("volume %s: expected Bound to claim uid %s, found phase %s claimRef %+v", pv.Name, claim.UID, pv.Status.Phase, ref)
	}
	if err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitVolumeGone(t, env, pv.Name)
}

// TestStaticVolumeBindsToMatchingClaim: upstream's PV controller binds a claim of no
// class to the smallest static volume that satisfies it.
func TestStaticVolumeBindsToMatchingClaim(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	var names []string
	for _, size := range []string{"1Gi", "10Gi", "50Gi"} {
		pv := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + strings.ToLower(size)},
			Spec: v1.PersistentVolumeSpec{
				Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
				AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
					Driver: sandbox.StorageDriver, VolumeHandle: ns + "-" + size,
				}},
			},
		}
		if _, err := env.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, pv.Name)
	}
	t.Cleanup(func() {
		for _, name := range names {
			_ = env.Kube.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
		}
	})
	claim := env.CreateClaim(t, sandboxtest.Claim(ns, "dataset", "", "5Gi").Obj())
	got := env.WaitForClaim(t, ns, claim.Name, "Bound", sandboxtest.ClaimBound)
	if got.Spec.VolumeName != names[1] {
		t.Errorf("expected claim bound to %s (the smallest of at least 5Gi), found %q", names[1], got.Spec.VolumeName)
	}
	pv := getVolume(t, env, names[1])
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != claim.UID {
		t.Errorf("volume %s: expected claimRef to claim uid %s, found %+v", pv.Name, claim.UID, ref)
	}
	if pv.Annotations[volumehelpers.AnnDynamicallyProvisioned] != "" {
		t.Errorf("volume %s: static, expected no %s annotation, found %v", pv.Name, volumehelpers.AnnDynamicallyProvisioned, pv.Annotations)
	}
}

// TestLocalClaimWaitsForSelectedNode: a claim of the WaitForFirstConsumer class waits
// for a scheduler's node; a pod bound before it is provisioned stays Pending with the
// kubelet's FailedMount message naming the claim, and runs once it is bound. A pod
// using it on another node (outside the volume's node affinity) never starts.
func TestLocalClaimWaitsForSelectedNode(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "wffc", Count: 2, CPU: "8", Memory: "32Gi", Zones: 2})
	claim := env.CreateClaim(t, sandboxtest.Claim(ns, "scratch", sandbox.StorageClassLocal, "1Gi").Obj())
	env.WaitForEvent(t, ns, claim.Name, "WaitForFirstConsumer", "waiting for first consumer")
	if got := getClaim(t, env, ns, claim.Name); got.Status.Phase != v1.ClaimPending || got.Spec.VolumeName != "" {
		t.Fatalf("expected claim Pending with no volume before a node is selected, found phase %s volume %q", got.Status.Phase, got.Spec.VolumeName)
	}

	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").Volume("scratch", claim.Name).Obj())
	env.Bind(t, pod, nodes[1])
	env.WaitForEvent(t, ns, pod.Name, kubelet.ReasonFailedMount, "error processing PVC "+ns+"/scratch: PVC is not bound")
	env.WaitForPod(t, pod, "Pending in ContainerCreating", containerCreating)

	patch := []byte(`{"metadata":{"annotations":{"` + volumehelpers.AnnSelectedNode + `":"` + nodes[1] + `"}}}`)
	if _, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), claim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := env.WaitForClaim(t, ns, claim.Name, "Bound", sandboxtest.ClaimBound)
	pv := getVolume(t, env, bound.Spec.VolumeName)
	wantTerm := "kubernetes.io/hostname In [wffc-1], topology.kubernetes.io/zone In [wffc-zone-1]"
	if got := describeAffinity(pv.Spec.NodeAffinity); got != wantTerm {
		t.Errorf("volume %s: expected node affinity %q, found %q", pv.Name, wantTerm, got)
	}
	if got := pv.Labels[v1.LabelTopologyZone]; got != "wffc-zone-1" {
		t.Errorf("volume %s: expected label %s=wffc-zone-1, found %v", pv.Name, v1.LabelTopologyZone, pv.Labels)
	}
	env.WaitForPod(t, pod, "Running", sandboxtest.PodPhase(v1.PodRunning))

	elsewhere := env.CreatePod(t, sandboxtest.Pod(ns, "worker-1").Volume("scratch", claim.Name).Obj())
	env.Bind(t, elsewhere, nodes[0])
	env.WaitForEvent(t, ns, elsewhere.Name, kubelet.ReasonFailedMount, "PV "+pv.Name+" has node affinity that excludes node "+nodes[0])
	env.WaitForPod(t, elsewhere, "Pending in ContainerCreating", containerCreating)
	// Simulated minutes later it is still waiting (each poll steps the clock 5s).
	for range 12 {
		env.Clock.Step(5 * time.Second)
	}
	env.WaitForPod(t, elsewhere, "still Pending in ContainerCreating", containerCreating)
}

// TestSelectedNodeThatDoesNotExistIsGivenBack: the provisioner removes a selected node
// that does not exist, for the scheduler to choose again, as csi-provisioner does.
func TestSelectedNodeThatDoesNotExistIsGivenBack(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	claim := env.CreateClaim(t, sandboxtest.Claim(ns, "lost", sandbox.StorageClassLocal, "1Gi").
		Annotate(volumehelpers.AnnSelectedNode, "no-such-node").Obj())
	env.WaitForEvent(t, ns, claim.Name, "ProvisioningFailed", `node "no-such-node" not found`)
	got := env.WaitForClaim(t, ns, claim.Name, "without a selected node", func(c *v1.PersistentVolumeClaim) bool {
		_, ok := c.Annotations[volumehelpers.AnnSelectedNode]
		return !ok
	})
	if got.Spec.VolumeName != "" {
		t.Errorf("expected no volume, found %q", got.Spec.VolumeName)
	}
}

// TestEphemeralVolumeGetsItsClaim: upstream's ephemeral volume controller makes the
// claim of a generic ephemeral volume, the provisioner its volume, and the pod runs;
// the claim and the volume go with the pod.
func TestEphemeralVolumeGetsItsClaim(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "ephemeral", Count: 1, CPU: "8", Memory: "32Gi"})
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").EphemeralVolume("cache", sandbox.StorageClassStandard, "1Gi").Obj())
	env.Bind(t, pod, nodes[0])
	claim := env.WaitForClaim(t, ns, "worker-0-cache", "Bound", sandboxtest.ClaimBound)
	if !metav1.IsControlledBy(claim, pod) {
		t.Errorf("claim %s: expected controlled by pod %s, found owners %+v", claim.Name, pod.Name, claim.OwnerReferences)
	}
	env.WaitForPod(t, pod, "Running", sandboxtest.PodPhase(v1.PodRunning))
	if err := env.Kube.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitVolumeGone(t, env, claim.Spec.VolumeName)
}

// containerCreating holds when the pod is Pending with its one container waiting in
// ContainerCreating, as while the kubelet cannot mount its volumes.
func containerCreating(p *v1.Pod) bool {
	cs := p.Status.ContainerStatuses
	return p.Status.Phase == v1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil &&
		cs[0].State.Waiting.Reason == "ContainerCreating"
}

func getClaim(t *testing.T, env *sandboxtest.Env, ns, name string) *v1.PersistentVolumeClaim {
	t.Helper()
	c, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func getVolume(t *testing.T, env *sandboxtest.Env, name string) *v1.PersistentVolume {
	t.Helper()
	pv, err := env.Kube.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

func waitVolumeGone(t *testing.T, env *sandboxtest.Env, name string) {
	t.Helper()
	env.WaitFor(t, "volume "+name+" deleted", func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// describeAffinity renders a volume's node affinity as "key In [values], ..." per term,
// terms separated by " | ".
func describeAffinity(a *v1.VolumeNodeAffinity) string {
	if a == nil || a.Required == nil {
		return "none"
	}
	var terms []string
	for _, term := range a.Required.NodeSelectorTerms {
		var reqs []string
		for _, r := range term.MatchExpressions {
			reqs = append(reqs, r.Key+" "+string(r.Operator)+" ["+strings.Join(r.Values, " ")+"]")
		}
		terms = append(terms, strings.Join(reqs, ", "))
	}
	return strings.Join(terms, " | ")
}

// TestEphemeralVolumeClaimOfAnotherIsRefused: a claim named as a pod's ephemeral
// volume's but not made for the pod (a tenant's) is not mounted.
func TestEphemeralVolumeClaimOfAnotherIsRefused(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "squat", Count: 1, CPU: "8", Memory: "32Gi"})
	env.CreateClaim(t, sandboxtest.Claim(ns, "worker-0-cache", sandbox.StorageClassStandard, "1Gi").Obj())
	env.WaitForClaim(t, ns, "worker-0-cache", "Bound", sandboxtest.ClaimBound)
	pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").EphemeralVolume("cache", sandbox.StorageClassStandard, "1Gi").Obj())
	env.Bind(t, pod, nodes[0])
	env.WaitForEvent(t, ns, pod.Name, kubelet.ReasonFailedMount, "PVC "+ns+"/worker-0-cache was not created for pod "+ns+"/worker-0 (pod is not owner)")
	env.WaitForPod(t, pod, "Pending in ContainerCreating", containerCreating)
}
