package kubefit

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/muster-sched/muster/internal/cluster"
)

// view is kube-scheduler's picture of a muster snapshot: a framework NodeInfo per node,
// with the pods the snapshot counts there (bound or assumed by a placement), rebuilt for a
// node only when the node's generation changed. It implements the plugins' SharedLister.
type view struct {
	snap  *cluster.Snapshot
	infos map[string]*cached
	// lists are the NodeInfos of all nodes and of those with pods with (anti-)affinity, as
	// of the last syncAll.
	all, affinity, antiAffinity, nonHostAnti []fwk.NodeInfo
	pvcUsers                                 map[string]int
	// podInfos are the framework's parsed pods (affinity terms, requests), by pod object:
	// a node's NodeInfo is rebuilt from them when one of its pods changes.
	podInfos map[*corev1.Pod]*framework.PodInfo
}

type cached struct {
	node       *corev1.Node
	generation uint64
	info       *framework.NodeInfo
}

// viewOf returns the view kept on snap, making it on first use.
func viewOf(snap *cluster.Snapshot) *view {
	if v, ok := snap.Ext().(*view); ok {
		return v
	}
	v := &view{snap: snap, infos: map[string]*cached{}, podInfos: map[*corev1.Pod]*framework.PodInfo{}}
	snap.SetExt(v)
	return v
}

// info returns the current NodeInfo of n.
func (v *view) info(n *cluster.NodeInfo) *framework.NodeInfo {
	c := v.infos[n.Name()]
	if c != nil && c.node == n.Node && c.generation == n.Generation() {
		return c.info
	}
	// The order of a node's pods shows in no plugin's verdict.
	info := framework.NewNodeInfo()
	for _, p := range n.Pods() {
		pi := v.podInfos[p]
		if pi == nil {
			var err error
			if pi, err = framework.NewPodInfo(p); err != nil {
				// Only a pod whose affinity terms do not parse fails; kube-scheduler's
				// cache keeps such a pod without them, and so does the view.
				pi = &framework.PodInfo{Pod: p}
			}
			v.podInfos[p] = pi
		}
		info.AddPodInfo(pi)
	}
	info.SetNode(n.Node)
	v.infos[n.Name()] = &cached{node: n.Node, generation: n.Generation(), info: info}
	return info
}

// syncAll brings every node's NodeInfo and the lists up to date, as PreFilter needs.
func (v *view) syncAll() {
	v.all = v.all[:0]
	v.affinity, v.antiAffinity, v.nonHostAnti = v.affinity[:0], v.antiAffinity[:0], v.nonHostAnti[:0]
	v.pvcUsers = map[string]int{}
	live := 0
	for _, n := range v.snap.Nodes() {
		info := v.info(n)
		v.all = append(v.all, info)
		live += len(info.Pods)
		if len(info.PodsWithAffinity) > 0 {
			v.affinity = append(v.affinity, info)
		}
		if len(info.PodsWithRequiredAntiAffinity) > 0 {
			v.antiAffinity = append(v.antiAffinity, info)
		}
		if len(info.PodsWithRequiredNonHostScopedAntiAffinity) > 0 {
			v.nonHostAnti = append(v.nonHostAnti, info)
		}
		for k, c := range info.PVCRefCounts {
			v.pvcUsers[k] += c
		}
	}
	if len(v.infos) > len(v.all) {
		for name := range v.infos {
			if v.snap.Node(name) == nil {
				delete(v.infos, name)
			}
		}
	}
	v.prunePodInfos(live)
}

// prunePodInfos forgets the parsed pods no node has any more, once they are more than
// twice the live ones.
func (v *view) prunePodInfos(live int) {
	if len(v.podInfos) <= 2*live+64 {
		return
	}
	keep := make(map[*corev1.Pod]*framework.PodInfo, live)
	for _, info := range v.all {
		for _, pi := range info.GetPods() {
			keep[pi.GetPod()] = v.podInfos[pi.GetPod()]
		}
	}
	v.podInfos = keep
}

func (v *view) NodeInfos() fwk.NodeInfoLister           { return v }
func (v *view) StorageInfos() fwk.StorageInfoLister     { return v }
func (v *view) PodGroupStates() fwk.PodGroupStateLister { return noGroupStates{} }
func (v *view) PodGroups() fwk.PodGroupLister           { return noGroups{} }
func (v *view) CompositePodGroupStates() fwk.CompositePodGroupStateLister {
	return noCompositeGroupStates{}
}
func (v *view) CompositePodGroups() fwk.CompositePodGroupLister { return noCompositeGroups{} }

func (v *view) List() ([]fwk.NodeInfo, error)                     { return v.all, nil }
func (v *view) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) { return v.affinity, nil }
func (v *view) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	return v.antiAffinity, nil
}
func (v *view) HavePodsWithRequiredNonHostScopedAntiAffinityList() ([]fwk.NodeInfo, error) {
	return v.nonHostAnti, nil
}

func (v *view) Get(name string) (fwk.NodeInfo, error) {
	n := v.snap.Node(name)
	if n == nil {
		return nil, fmt.Errorf("node %q not found", name)
	}
	return v.info(n), nil
}

// IsPVCUsedByPods reports whether a pod counted on a node uses the claim namespace/name.
func (v *view) IsPVCUsedByPods(key string) bool { return v.pvcUsers[key] > 0 }

// The pod-group listers answer the plugins that read kube-scheduler's own pod-group state,
// which muster does not run (it decides its groups whole, before any filter): none is
// known. No plugin muster hosts reads them.
type (
	noGroups               struct{}
	noGroupStates          struct{}
	noCompositeGroups      struct{}
	noCompositeGroupStates struct{}
)

func notTracked(namespace, name string) error {
	return fmt.Errorf("pod group %s/%s: muster does not track kube-scheduler's pod groups", namespace, name)
}

func (noGroups) Get(ns, name string) (*schedulingv1beta1.PodGroup, error) {
	return nil, notTracked(ns, name)
}
func (noGroupStates) Get(ns, name string) (fwk.PodGroupState, error) {
	return nil, notTracked(ns, name)
}
func (noCompositeGroups) Get(ns, name string) (*schedulingv1alpha3.CompositePodGroup, error) {
	return nil, notTracked(ns, name)
}
func (noCompositeGroupStates) Get(ns, name string) (fwk.CompositePodGroupState, error) {
	return nil, notTracked(ns, name)
}
