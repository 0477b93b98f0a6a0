package kubefit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/kubefit"
)

// TestVolumeNodes: a pod may be planned only where the volumes of its bound claims may
// be used, all of them; a claim not bound yet, or bound to a volume without node
// affinity, does not narrow the nodes; an ephemeral volume's claim is named after the
// pod and the volume.
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
	memo := map[*corev1.PersistentVolume][]string{}
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
