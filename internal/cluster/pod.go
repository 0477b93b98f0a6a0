package cluster

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodReady reports whether a pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// KubeletRejected reports whether the kubelet refused p at admission: phase Failed
// with reason OutOf<resource>, because its node could not run it after all (another
// scheduler bound a pod there first).
func KubeletRejected(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && strings.HasPrefix(p.Status.Reason, "OutOf")
}

// PodFailure describes why p failed: its reason and message, or the first container
// (init containers first) that exited with an error, e.g. "init container fetch
// exited with 1 (Error)".
func PodFailure(p *corev1.Pod) string {
	if p.Status.Reason != "" {
		return strings.TrimSpace(p.Status.Reason + " " + p.Status.Message)
	}
	for _, list := range []struct {
		kind     string
		statuses []corev1.ContainerStatus
	}{{"init container", p.Status.InitContainerStatuses}, {"container", p.Status.ContainerStatuses}} {
		for _, c := range list.statuses {
			if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
				if t.Reason != "" {
					return fmt.Sprintf("%s %s exited with %d (%s)", list.kind, c.Name, t.ExitCode, t.Reason)
				}
				return fmt.Sprintf("%s %s exited with %d", list.kind, c.Name, t.ExitCode)
			}
		}
	}
	return "phase Failed"
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
