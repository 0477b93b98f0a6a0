package kubefit

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/muster-sched/muster/internal/cluster"
)

// Upstream returns kube-scheduler's own verdict for pod on every node, computed as
// kube-scheduler computes it: its own scheduler-cache snapshot of nodes and pods, the same
// plugins and arguments, PreFilter then Filter per node. It does not use muster's view or
// PreFilter extensions; tests compare muster's placement with it.
func (h *Host) Upstream(nodes []*corev1.Node, pods []*corev1.Pod, objs *cluster.Objects, pod *corev1.Pod) (map[string]Verdict, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	snap := cluster.New(nil, nil)
	*snap.Objects() = *objs
	if err := h.load(snap); err != nil {
		return nil, err
	}
	up := cache.NewSnapshot(pods, nodes)
	h.lister.SharedLister = up
	// The next load points the lister back at a muster snapshot's view.
	defer func() { h.objects = nil }()

	state := framework.NewCycleState()
	out := make(map[string]Verdict, len(nodes))
	res, st, _ := h.fw.RunPreFilterPlugins(background, state, pod)
	for _, n := range nodes {
		switch {
		case st.IsRejected():
			out[n.Name] = verdictOf(st)
			continue
		case !st.IsSuccess():
			return nil, fmt.Errorf("PreFilter: %w", st.AsError())
		case !res.AllNodes() && !res.NodeNames.Has(n.Name):
			out[n.Name] = Verdict{Plugin: "PreFilter", Unresolvable: true}
			continue
		}
		info, err := up.Get(n.Name)
		if err != nil {
			return nil, err
		}
		out[n.Name] = verdictOf(h.fw.RunFilterPlugins(background, state, pod, info))
	}
	return out, nil
}
