package sim

import (
	"slices"

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
	workers := make([]int, 0, len(j.pods))
	for i := range j.pods {
		workers = append(workers, i)
	}
	slices.Sort(workers)
	var out []*corev1.Pod
	for _, i := range workers {
		if p := w.pods[j.pods[i]]; p != nil {
			out = append(out, p.DeepCopy())
		}
	}
	return out
}
