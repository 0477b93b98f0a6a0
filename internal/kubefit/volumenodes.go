package kubefit

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"

	"github.com/muster-sched/muster/internal/cluster"
)

// VolumeNodes returns, sorted, the nodes of snap on which every persistent volume that
// pod's bound claims are bound to may be used: the volume's required node affinity (a
// zonal disk, a local volume) matches the node's labels, as kube-scheduler's
// VolumeBinding checks a bound claim (volume.CheckNodeAffinity). The forecast plans a
// member only there, so that a job whose data is on a disk of one zone is not expected
// to start in another.
//
// It returns nil when pod mounts no bound claim whose volume has node affinity. A claim
// not bound yet, whose volume is chosen or provisioned when the pod is placed, does not
// narrow the nodes. The nodes found for each volume are kept in memo, which the caller
// empties when the snapshot's nodes change (its Layout).
func VolumeNodes(snap *cluster.Snapshot, pod *corev1.Pod, memo map[*corev1.PersistentVolume][]string) []string {
	objs := snap.Objects()
	var out []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var claim string
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim = ephemeral.VolumeClaimName(pod, v)
		default:
			continue
		}
		pvc := objs.Claims[pod.Namespace+"/"+claim]
		if pvc == nil || pvc.Spec.VolumeName == "" {
			continue
		}
		pv := objs.Volumes[pvc.Spec.VolumeName]
		if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			continue
		}
		nodes, ok := memo[pv]
		if !ok {
			nodes = []string{} // none, unless found
			for _, n := range snap.Nodes() {
				if volume.CheckNodeAffinity(pv, n.Node.Labels) == nil {
					nodes = append(nodes, n.Name())
				}
			}
			slices.Sort(nodes)
			memo[pv] = nodes
		}
		if out == nil {
			out = nodes
		} else {
			out = Narrow(out, nodes)
		}
	}
	return out
}
