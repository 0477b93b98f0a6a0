package kubefit

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	"github.com/muster-sched/muster/internal/cluster"
)

// VolumeMemo keeps, for one layout of a snapshot's nodes, the nodes found for each
// persistent volume (its node affinity) and each storage class (its allowed topologies).
// The zero VolumeMemo is not ready: use NewVolumeMemo.
type VolumeMemo struct {
	volumes map[*corev1.PersistentVolume][]string
	classes map[*storagev1.StorageClass][]string
	// available lists the Available volumes of each class, as objs showed them at gen:
	// a claim not bound yet may get one of them.
	available map[string][]*corev1.PersistentVolume
	objs      *cluster.Objects
	gen       uint64
}

// NewVolumeMemo returns an empty memo.
func NewVolumeMemo() *VolumeMemo {
	return &VolumeMemo{volumes: map[*corev1.PersistentVolume][]string{}, classes: map[*storagev1.StorageClass][]string{}}
}

// Len returns how many volumes and classes m keeps nodes for.
func (m *VolumeMemo) Len() int { return len(m.volumes) + len(m.classes) }

// VolumeNodes returns, sorted, the nodes of snap on which every persistent volume claim
// of pod may be served, as kube-scheduler's VolumeBinding checks them:
//   - a bound claim, where its volume's required node affinity (a zonal disk, a local
//     volume) matches the node's labels (volume.CheckNodeAffinity);
//   - a claim not bound yet whose StorageClass binds at the first consumer
//     (WaitForFirstConsumer), where an available volume of the class that matches the
//     claim may be used (volume.FindMatchingVolume), or, if the class provisions
//     volumes, where its allowed topologies match the node
//     (helper.MatchTopologySelectorTerms).
//
// The forecast plans a member only there, so that a job whose data is on a disk of one
// zone, or must be provisioned in one, is not expected to start in another.
//
// It returns nil when no claim of pod narrows the nodes: claims bound to volumes without
// node affinity, claims of classes that bind at once (the PV controller binds them before
// the pod may be placed) or that provision anywhere, and claims or classes not found.
// What is found is kept in memo, which the caller replaces when the snapshot's nodes
// change (its Layout).
func VolumeNodes(snap *cluster.Snapshot, pod *corev1.Pod, memo *VolumeMemo) []string {
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
		if pvc == nil {
			continue
		}
		var nodes []string
		if pvc.Spec.VolumeName != "" {
			pv := objs.Volumes[pvc.Spec.VolumeName]
			if pv == nil {
				continue
			}
			nodes = memo.volumeNodes(snap, pv)
		} else {
			nodes = memo.unboundNodes(snap, objs, pvc)
		}
		switch {
		case nodes == nil:
		case out == nil:
			out = nodes
		default:
			out = Narrow(out, nodes)
		}
	}
	return out
}

// volumeNodes returns, sorted, the nodes pv may be used on; nil for every node.
func (m *VolumeMemo) volumeNodes(snap *cluster.Snapshot, pv *corev1.PersistentVolume) []string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	nodes, ok := m.volumes[pv]
	if !ok {
		nodes = []string{} // none, unless found
		for _, n := range snap.Nodes() {
			if volume.CheckNodeAffinity(pv, n.Node.Labels) == nil {
				nodes = append(nodes, n.Name())
			}
		}
		slices.Sort(nodes)
		m.volumes[pv] = nodes
	}
	return nodes
}

// unboundNodes returns, sorted, the nodes where unbound claim pvc may get a volume when
// its pod is placed there; nil for every node.
func (m *VolumeMemo) unboundNodes(snap *cluster.Snapshot, objs *cluster.Objects, pvc *corev1.PersistentVolumeClaim) []string {
	name := volume.GetPersistentVolumeClaimClass(pvc)
	class := objs.Classes[name]
	if class == nil || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil
	}
	seen := map[string]bool{}
	if class.Provisioner != volume.NotSupportedProvisioner {
		if len(class.AllowedTopologies) == 0 {
			return nil
		}
		for _, n := range m.classNodes(snap, class) {
			seen[n] = true
		}
	}
	for _, pv := range m.availableOf(objs, name) {
		nodes := m.volumeNodes(snap, pv)
		var on *corev1.Node
		switch {
		case nodes == nil:
			on = anyNode(snap)
		case len(nodes) > 0:
			on = snap.Node(nodes[0]).Node
		}
		if on == nil {
			continue
		}
		if match, _ := volume.FindMatchingVolume(pvc, []*corev1.PersistentVolume{pv}, on, nil, true, true); match == nil {
			continue
		}
		if nodes == nil {
			return nil
		}
		for _, n := range nodes {
			seen[n] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// availableOf returns the Available volumes of class in objs, listed once per
// generation of objs rather than once per claim: a cluster may have thousands of
// volumes, few of them available.
func (m *VolumeMemo) availableOf(objs *cluster.Objects, class string) []*corev1.PersistentVolume {
	if m.available == nil || m.objs != objs || m.gen != objs.Generation() {
		m.available, m.objs, m.gen = map[string][]*corev1.PersistentVolume{}, objs, objs.Generation()
		for _, pv := range objs.Volumes {
			if pv.Status.Phase == corev1.VolumeAvailable {
				c := volume.GetPersistentVolumeClass(pv)
				m.available[c] = append(m.available[c], pv)
			}
		}
	}
	return m.available[class]
}

// classNodes returns, sorted, the nodes class's allowed topologies match.
func (m *VolumeMemo) classNodes(snap *cluster.Snapshot, class *storagev1.StorageClass) []string {
	nodes, ok := m.classes[class]
	if !ok {
		nodes = []string{}
		for _, n := range snap.Nodes() {
			if v1helper.MatchTopologySelectorTerms(class.AllowedTopologies, labels.Set(n.Node.Labels)) {
				nodes = append(nodes, n.Name())
			}
		}
		slices.Sort(nodes)
		m.classes[class] = nodes
	}
	return nodes
}

// anyNode returns one of snap's nodes, or nil when it has none.
func anyNode(snap *cluster.Snapshot) *corev1.Node {
	for _, n := range snap.Nodes() {
		return n.Node
	}
	return nil
}
