package sim

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// startKubelet models a kubelet taking a bound pod: it becomes Running and Ready
// ReadyAfter later, unless its worker is set to fail init.
func (w *World) startKubelet(key string) {
	j, i := w.jobOf(key)
	if j == nil {
		return
	}
	uid := w.pods[key].UID
	failInit, failStart := slices.Contains(j.FailInit, i), slices.Contains(j.FailStart, i)
	w.at(w.now.Add(j.ReadyAfter), func() {
		p := w.pods[key]
		if p == nil || p.UID != uid || p.Status.Phase != corev1.PodPending {
			return
		}
		p = revise(p)
		switch {
		case failStart:
			p.Status.Phase = corev1.PodFailed
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"},
			}}}
			w.logf("%s: pod %s failed to start", j.Name, shortKey(key))
		case failInit:
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "init container exited with code 1"},
			}}}
		default:
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		w.pods[key] = p
		w.sched.SetPod(p, j.GroupKey())
		w.touch(j)
		w.checkProgress(j)
	})
	w.checkProgress(j)
}

// checkProgress starts a job's useful work when MinMember members are Ready together, and
// pauses it when they no longer are (a fixed-world-size job stops at a lost worker).
func (w *World) checkProgress(j *Job) {
	w.touch(j)
	if _, bound := j.boundGPUs(w); bound >= j.MinMember && j.Whole.IsZero() {
		j.Whole = w.now
		w.stopPredicting(j) // the start it got is known: too late to predict it
	}
	ready := 0
	for _, key := range j.pods {
		if p := w.pods[key]; p != nil && p.Status.Phase == corev1.PodRunning && cluster.PodReady(p) {
			ready++
		}
	}
	switch {
	case !j.started && ready >= j.MinMember && j.Finished.IsZero():
		j.started = true
		j.run++
		if j.Ready.IsZero() {
			j.Ready = w.now
		}
		w.logf("%s: %d workers Ready, training", j.Name, ready)
		run := j.run
		w.at(w.now.Add(j.RunFor), func() {
			if j.started && j.run == run {
				w.finish(j)
			}
		})
	case j.started && ready < j.MinMember:
		j.started = false
		w.logf("%s: %d of %d workers Ready, training paused", j.Name, ready, j.MinMember)
	}
}

// finish completes a job: its pods succeed and release their GPUs.
func (w *World) finish(j *Job) {
	j.started = false
	j.Finished = w.now
	for _, key := range j.pods {
		p := w.pods[key]
		if p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		p = revise(p)
		p.Status.Phase = corev1.PodSucceeded
		p.Status.Conditions = nil
		w.pods[key] = p
		w.sched.SetPod(p, j.GroupKey())
	}
	w.touch(j)
	w.logf("%s: finished", j.Name)
	if w.opts.CollectFinished {
		w.done = append(w.done, j)
	}
}

// collect deletes finished jobs' pods and groups.
func (w *World) collect() {
	for _, j := range w.done {
		for _, key := range j.pods {
			if _, ok := w.pods[key]; ok {
				delete(w.pods, key)
				delete(w.podJob, key)
				w.sched.RemovePod(key)
			}
		}
		w.sched.RemoveGroup(j.GroupKey())
		w.touch(j)
	}
	w.done = w.done[:0]
}

// KillPod fails one worker's pod (its process died); the job controller replaces it.
func (w *World) KillPod(job string, index int) {
	j := w.jobs[job]
	if j == nil {
		return
	}
	w.failPod(j.pods[index], "Error")
	w.settle()
}

func (w *World) failPod(key, reason string) {
	p := w.pods[key]
	if p == nil {
		return
	}
	p = revise(p)
	p.Status.Phase = corev1.PodFailed
	p.Status.Reason = reason
	p.Status.Conditions = nil
	w.pods[key] = p
	j, _ := w.jobOf(key)
	if j != nil {
		w.touch(j)
		w.sched.SetPod(p, j.GroupKey())
		w.logf("%s: pod %s failed (%s)", j.Name, shortKey(key), reason)
	}
	w.deletePod(key)
}

// NodeDown marks a node NotReady and fails the pods on it.
func (w *World) NodeDown(name string) {
	n := w.nodes[name]
	if n == nil {
		return
	}
	n = n.DeepCopy()
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	w.nodes[name] = n
	w.sched.SetNode(n)
	w.logf("node %s: down", name)
	for _, key := range sortedPodKeys(w.pods) {
		if p := w.pods[key]; p.Spec.NodeName == name && p.Status.Phase != corev1.PodSucceeded {
			w.failPod(key, "NodeLost")
		}
	}
	w.settle()
}

func sortedPodKeys(m map[string]*corev1.Pod) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Cancel deletes a job: its pods and its group go at once.
func (w *World) Cancel(job string) {
	j := w.jobs[job]
	if j == nil {
		return
	}
	j.Cancelled = true
	j.started = false
	w.stopPredicting(j)
	for _, key := range j.pods {
		w.deletePod(key)
	}
	w.sched.RemoveGroup(j.GroupKey())
	w.logf("%s: cancelled", j.Name)
	w.settle()
}
