package sim

import (
	corev1 "k8s.io/api/core/v1"
)

// Pods returns copies of the job's pods that exist now (bound or not, Failed ones until
// they are deleted), in worker order, as a pod list of the cluster would show them; nil
// for a job that was never submitted.
func (w *World) Pods(job string) []*corev1.Pod {
	j := w.jobs[job]
	if j == nil {
		return nil
	}
	var out []*corev1.Pod
	for _, key := range j.pods {
		if p := w.pods[key]; p != nil {
			out = append(out, p.DeepCopy())
		}
	}
	return out
}

// revise returns a new version of p for the world to change, as an update through the
// API server makes one. The scheduler keeps the versions it is given (engine.SetPod stores
// the pointer and compares the next version with it), so a version is never changed once
// handed over. A shallow copy is enough: versions share what the world never writes after
// creation (metadata maps, containers), and the world replaces, never edits, the status
// slices it changes. A deep copy of every status write was 1 s of a month's replay.
func revise(p *corev1.Pod) *corev1.Pod {
	q := *p
	return &q
}
