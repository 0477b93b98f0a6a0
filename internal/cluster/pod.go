package cluster

import corev1 "k8s.io/api/core/v1"

// PodReady reports whether a pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// FromLists builds a snapshot from the items of node and pod lists, as a client returns
// them.
func FromLists(nodes []corev1.Node, pods []corev1.Pod) *Snapshot {
	return New(pointers(nodes), pointers(pods))
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
