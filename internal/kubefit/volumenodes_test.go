package kubefit_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// TestVolumeNodes: a pod may be planned only where the volumes of its bound claims may
// be used, all of them; a claim bound to a volume without node affinity, or not bound
// and of no class, does not narrow the nodes; an ephemeral volume's claim is named after
// the pod and the volume. Unbound claims: see TestVolumeNodesOfUnboundClaims.
func TestVolumeNodes(t *testing.T) {
	snap := cluster.New([]*corev1.Node{
		gt.Node("n0").Label(corev1.LabelTopologyZone, "a").Obj(),
		gt.Node("n1").Label(corev1.LabelTopologyZone, "a").Obj(),
		gt.Node("n2").Label(corev1.LabelTopologyZone, "b").Obj(),
	}, nil)
	snap.SetObject(gt.ZonalVolume("pv-a", "a", "default", "in-a"))
	snap.SetObject(gt.BoundClaim("default", "in-a", "pv-a"))
	local := gt.ZonalVolume("pv-n1", "a", "default", "on-n1")
	local.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Key = corev1.LabelHostname
	local.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"n1"}
	snap.SetObject(local)
	snap.SetObject(gt.BoundClaim("default", "on-n1", "pv-n1"))
	anywhere := gt.ZonalVolume("pv-any", "a", "default", "anywhere")
	anywhere.Spec.NodeAffinity = nil
	snap.SetObject(anywhere)
	snap.SetObject(gt.BoundClaim("default", "anywhere", "pv-any"))
	unbound := gt.BoundClaim("default", "unbound", "")
	unbound.Status.Phase = corev1.ClaimPending
	snap.SetObject(unbound)
	snap.SetObject(gt.BoundClaim("default", "w-scratch", "pv-a")) // the ephemeral volume's claim

	ephemeral := gt.Pod("w").Obj()
	ephemeral.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
	memo := kubefit.NewVolumeMemo()
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"zonal", gt.Pod("w").Claim("in-a").Obj(), []string{"n0", "n1"}},
		{"zonal and local", gt.Pod("w").Claim("in-a").Claim("on-n1").Obj(), []string{"n1"}},
		{"no node affinity", gt.Pod("w").Claim("anywhere").Obj(), nil},
		{"unbound", gt.Pod("w").Claim("unbound").Obj(), nil},
		{"missing", gt.Pod("w").Claim("missing").Obj(), nil},
		{"ephemeral", ephemeral, []string{"n0", "n1"}},
	} {
		got := kubefit.VolumeNodes(snap, c.pod, memo)
		if diff := cmp.Diff(c.want, got); diff != "" || (c.want == nil) != (got == nil) {
			t.Errorf("%s: VolumeNodes = %#v (-want +got):\n%s", c.name, got, diff)
		}
	}
}

// TestVolumeNodesOfUnboundClaims: a claim not bound yet whose class binds at the first
// consumer may be served where its class provisions (allowed topologies) or where an
// available volume of the class that fits the claim may be used; a class that binds at
// once, or provisions anywhere, or an available volume usable anywhere, does not narrow
// the nodes; a class with neither a provisioner nor a fitting volume leaves none.
func TestVolumeNodesOfUnboundClaims(t *testing.T) {
	snap := cluster.New([]*corev1.Node{
		gt.Node("n0").Label(corev1.LabelTopologyZone, "a").Obj(),
		gt.Node("n1").Label(corev1.LabelTopologyZone, "a").Obj(),
		gt.Node("n2").Label(corev1.LabelTopologyZone, "b").Obj(),
	}, nil)
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	inZone := func(zone string) []corev1.TopologySelectorTerm {
		return []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: []string{zone}}}}}
	}
	class := func(name, provisioner string, mode *storagev1.VolumeBindingMode, zones []corev1.TopologySelectorTerm) {
		snap.SetObject(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
			Provisioner: provisioner, VolumeBindingMode: mode, AllowedTopologies: zones})
	}
	class("zonal-b", "disk.csi.example.com", &wffc, inZone("b"))
	class("anywhere", "disk.csi.example.com", &wffc, nil)
	class("at-once-b", "disk.csi.example.com", &immediate, inZone("b"))
	class("local", "kubernetes.io/no-provisioner", &wffc, nil)
	class("local-none", "kubernetes.io/no-provisioner", &wffc, nil)
	class("zonal-b-or-local", "disk.csi.example.com", &wffc, inZone("b"))
	class("local-free", "kubernetes.io/no-provisioner", &wffc, nil)
	// available volumes: a local one of 10Gi on n0, one too small on n1, one taken on
	// n2; one of zonal-b-or-local on n0; one of local-free usable anywhere.
	available := func(name, class, node, size string) *corev1.PersistentVolume {
		pv := gt.ZonalVolume(name, "", "", "")
		pv.Spec.ClaimRef, pv.Status.Phase, pv.Spec.StorageClassName = nil, corev1.VolumeAvailable, class
		pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse(size)
		req := &pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
		req.Key, req.Values = corev1.LabelHostname, []string{node}
		return pv
	}
	snap.SetObject(available("local-n0", "local", "n0", "10Gi"))
	snap.SetObject(available("local-n1", "local", "n1", "1Gi"))
	taken := available("local-n2", "local", "n2", "10Gi")
	taken.Status.Phase = corev1.VolumeBound
	snap.SetObject(taken)
	snap.SetObject(available("mixed-n0", "zonal-b-or-local", "n0", "10Gi"))
	free := available("free", "local-free", "n0", "10Gi")
	free.Spec.NodeAffinity = nil
	snap.SetObject(free)
	claim := func(name, class string) string {
		c := gt.BoundClaim("default", name, "")
		c.Spec.StorageClassName, c.Status.Phase = &class, corev1.ClaimPending
		snap.SetObject(c)
		return name
	}
	memo := kubefit.NewVolumeMemo()
	for _, c := range []struct {
		name  string
		claim string
		want  []string
	}{
		{"provisioned in zone b", claim("c-zonal-b", "zonal-b"), []string{"n2"}},
		{"provisioned anywhere", claim("c-anywhere", "anywhere"), nil},
		{"bound at once", claim("c-at-once-b", "at-once-b"), nil},
		{"a local volume that fits", claim("c-local", "local"), []string{"n0"}},
		{"no volume, no provisioner", claim("c-local-none", "local-none"), []string{}},
		{"provisioned in zone b or a volume on n0", claim("c-mixed", "zonal-b-or-local"), []string{"n0", "n2"}},
		{"a volume usable anywhere", claim("c-local-free", "local-free"), nil},
		{"class not found", claim("c-missing", "missing"), nil},
	} {
		got := kubefit.VolumeNodes(snap, gt.Pod("w").Claim(c.claim).Obj(), memo)
		if diff := cmp.Diff(c.want, got); diff != "" || (c.want == nil) != (got == nil) {
			t.Errorf("%s: VolumeNodes = %#v (-want +got):\n%s", c.name, got, diff)
		}
	}
	// A volume made available later is found with the same memo.
	snap.SetObject(available("local-none-n1", "local-none", "n1", "10Gi"))
	if got := kubefit.VolumeNodes(snap, gt.Pod("w").Claim("c-local-none").Obj(), memo); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("a volume of class local-none on n1 made available: VolumeNodes = %#v, want [n1]", got)
	}
	both := gt.Pod("w").Claim("c-local").Claim("c-zonal-b").Obj()
	if got := kubefit.VolumeNodes(snap, both, memo); got == nil || len(got) != 0 {
		t.Errorf("a local volume on n0 and a disk provisioned in zone b: VolumeNodes = %#v, want none", got)
	}
}
