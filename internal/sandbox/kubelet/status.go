package kubelet

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod and container reasons the simulated kubelet writes, as a real kubelet does.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	reasonCompleted         = "Completed"
	reasonError             = "Error"
	reasonNotReady          = "ContainersNotReady"
	reasonNotInitialized    = "ContainersNotInitialized"
	reasonPodCompleted      = "PodCompleted"
	reasonPodFailed         = "PodFailed"
	reasonUnknownStatus     = "ContainerStatusUnknown"

	// ReasonNodeLost is the pod reason when its node is marked down.
	ReasonNodeLost = "NodeLost"
	// ReasonInvalidAnnotation is the pod reason when a fault annotation is malformed.
	ReasonInvalidAnnotation = "InvalidSandboxAnnotation"
	// ReasonOutOfPrefix prefixes the reason of a pod rejected at admission:
	// "OutOf" + the resource name, e.g. OutOfnvidia.com/gpu, as the kubelet does.
	ReasonOutOfPrefix = "OutOf"

	// exitCodeKilled is the exit code of a container lost with its node (SIGKILL).
	exitCodeKilled = 137
	// exitCodeTerminated is the exit code of a container stopped for its pod's
	// deletion (SIGTERM).
	exitCodeTerminated = 143
)

// renderStatus is the status pod has at time now when it was admitted to its node at
// boundAt, with faults f and an image pull of pull. It also returns how long until
// the status changes next, or 0 if it never changes on its own. It is pure: the
// timeline is computed from its arguments only.
//
// The timeline: Pending with containers ContainerCreating until boundAt+pull, then
// Running (all init containers completed), Ready after f.readyAfter more, and
// Succeeded or Failed after f.runFor of running (if set). With f.failInit the pod
// never gets past its first init container: it crash-loops, or, with restartPolicy
// Never, fails.
func renderStatus(pod *v1.Pod, boundAt, now time.Time, f faults, pull time.Duration) (v1.PodStatus, time.Duration) {
	s := pod.Status.DeepCopy()
	s.StartTime = stamp(boundAt)
	s.Reason, s.Message = "", ""
	setCondition(s, v1.PodScheduled, v1.ConditionTrue, boundAt, "")
	runningAt := boundAt.Add(pull)
	if now.Before(runningAt) {
		creating(s, pod, boundAt)
		return *s, runningAt.Sub(now)
	}
	if f.failInit {
		if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
			initFailed(s, pod, boundAt, runningAt)
		} else {
			crashLooping(s, pod, boundAt, runningAt)
		}
		return *s, 0
	}
	endAt := runningAt.Add(f.runFor)
	if f.runFor > 0 && !now.Before(endAt) {
		exited(s, pod, runningAt, endAt, f.exitCode)
		return *s, 0
	}
	readyAt := runningAt.Add(f.readyAfter)
	ready := !now.Before(readyAt)
	running(s, pod, boundAt, runningAt, readyAt, ready)
	var next time.Duration
	if !ready {
		next = readyAt.Sub(now)
	}
	if f.runFor > 0 && (next == 0 || endAt.Sub(now) < next) {
		next = endAt.Sub(now)
	}
	return *s, next
}

// mountingStatus is the status of a pod admitted to its node at boundAt whose volumes
// cannot be mounted yet: Pending, its containers ContainerCreating, as until its
// images are pulled.
func mountingStatus(pod *v1.Pod, boundAt time.Time) v1.PodStatus {
	s := pod.Status.DeepCopy()
	s.StartTime = stamp(boundAt)
	s.Reason, s.Message = "", ""
	setCondition(s, v1.PodScheduled, v1.ConditionTrue, boundAt, "")
	creating(s, pod, boundAt)
	return *s
}

// creating is the status while images are pulled: Pending, nothing started.
func creating(s *v1.PodStatus, pod *v1.Pod, boundAt time.Time) {
	s.Phase = v1.PodPending
	waiting := func(v1.Container) containerState {
		return containerState{state: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonContainerCreating}}}
	}
	if len(pod.Spec.InitContainers) > 0 {
		s.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, waiting)
		waiting = func(v1.Container) containerState {
			return containerState{state: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonPodInitializing}}}
		}
		setCondition(s, v1.PodInitialized, v1.ConditionFalse, boundAt, reasonNotInitialized)
	} else {
		setCondition(s, v1.PodInitialized, v1.ConditionTrue, boundAt, "")
	}
	s.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, waiting)
	setReady(s, false, boundAt, reasonNotReady)
}

// crashLooping is the status of a pod whose initialisation keeps failing. With init
// containers the pod stays Pending in its first one; without, it is Running with
// its containers in CrashLoopBackOff. Either way it is never Ready.
func crashLooping(s *v1.PodStatus, pod *v1.Pod, boundAt, runningAt time.Time) {
	crash := containerState{
		state:    v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff, Message: "back-off restarting failed container"}},
		last:     v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: reasonError, StartedAt: *stamp(runningAt), FinishedAt: *stamp(runningAt)}},
		restarts: 1,
	}
	setReady(s, false, boundAt, reasonNotReady)
	if len(pod.Spec.InitContainers) == 0 {
		s.Phase = v1.PodRunning
		s.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, func(v1.Container) containerState { return crash })
		return
	}
	s.Phase = v1.PodPending
	setCondition(s, v1.PodInitialized, v1.ConditionFalse, boundAt, reasonNotInitialized)
	first := pod.Spec.InitContainers[0].Name
	s.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, func(c v1.Container) containerState {
		if c.Name == first {
			return crash
		}
		return containerState{state: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonPodInitializing}}}
	})
	s.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, func(v1.Container) containerState {
		return containerState{state: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonPodInitializing}}}
	})
}

// initFailed is the status of a pod with restartPolicy Never whose initialisation
// failed: the kubelet does not restart the container, and the pod is Failed. With init
// containers, the first exited with 1 and the others never started; without, the
// containers exited with 1.
func initFailed(s *v1.PodStatus, pod *v1.Pod, boundAt, runningAt time.Time) {
	if len(pod.Spec.InitContainers) == 0 {
		exited(s, pod, runningAt, runningAt, 1)
		return
	}
	s.Phase = v1.PodFailed
	setReady(s, false, runningAt, reasonPodFailed)
	setCondition(s, v1.PodInitialized, v1.ConditionFalse, boundAt, reasonNotInitialized)
	first := pod.Spec.InitContainers[0].Name
	s.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, func(c v1.Container) containerState {
		if c.Name == first {
			return containerState{state: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 1, Reason: reasonError, StartedAt: *stamp(runningAt), FinishedAt: *stamp(runningAt),
			}}}
		}
		return containerState{state: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonPodInitializing}}}
	})
	s.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, func(v1.Container) containerState {
		return containerState{state: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reasonPodInitializing}}}
	})
}

// running is the status of a pod whose containers run, Ready from readyAt on.
func running(s *v1.PodStatus, pod *v1.Pod, boundAt, runningAt, readyAt time.Time, ready bool) {
	s.Phase = v1.PodRunning
	initialized(s, pod, boundAt, runningAt)
	s.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, func(v1.Container) containerState {
		return containerState{
			state:   v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: *stamp(runningAt)}},
			started: true,
			ready:   ready,
		}
	})
	if ready {
		setReady(s, true, readyAt, "")
	} else {
		setReady(s, false, boundAt, reasonNotReady)
	}
}

// exited is the status of a pod whose containers exited with code at endAt.
func exited(s *v1.PodStatus, pod *v1.Pod, runningAt, endAt time.Time, code int32) {
	s.Phase = v1.PodSucceeded
	reason := reasonCompleted
	if code != 0 {
		s.Phase, reason = v1.PodFailed, reasonError
	}
	initialized(s, pod, runningAt, runningAt)
	s.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, func(v1.Container) containerState {
		return containerState{state: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: *stamp(runningAt), FinishedAt: *stamp(endAt),
		}}}
	})
	condReason := reasonPodCompleted
	if code != 0 {
		condReason = reasonPodFailed
	}
	setReady(s, false, endAt, condReason)
}

// initialized marks every init container completed and the pod Initialized.
func initialized(s *v1.PodStatus, pod *v1.Pod, boundAt, runningAt time.Time) {
	if len(pod.Spec.InitContainers) == 0 {
		setCondition(s, v1.PodInitialized, v1.ConditionTrue, boundAt, "")
		return
	}
	s.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, func(v1.Container) containerState {
		return containerState{state: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: 0, Reason: reasonCompleted, StartedAt: *stamp(runningAt), FinishedAt: *stamp(runningAt),
		}}}
	})
	setCondition(s, v1.PodInitialized, v1.ConditionTrue, runningAt, "")
}

// failedStatus is the status of a pod the kubelet fails at time at with reason and
// message: its running or waiting containers are marked terminated, as when the
// kubelet can no longer find them.
func failedStatus(pod *v1.Pod, reason, message string, at time.Time) v1.PodStatus {
	s := pod.Status.DeepCopy()
	s.Phase, s.Reason, s.Message = v1.PodFailed, reason, message
	terminate(s, at, exitCodeKilled, reasonUnknownStatus)
	return *s
}

// killedStatus is the status of a pod being deleted once the kubelet has stopped its
// containers at time at, written before the kubelet confirms the deletion, as a
// real kubelet does: Failed, running containers exited on SIGTERM, waiting ones never
// found. A Job whose podFailurePolicy is set counts its deleted pods only once they
// are Failed, and reads the pod's conditions (DisruptionTarget) then.
func killedStatus(pod *v1.Pod, at time.Time) v1.PodStatus {
	s := pod.Status.DeepCopy()
	s.Phase = v1.PodFailed
	terminate(s, at, exitCodeTerminated, reasonError)
	return *s
}

// terminate marks every container of s that has not terminated as terminated at at:
// a running one with exitCode and reason, a waiting one as never found (SIGKILL). The
// pod is no longer Ready.
func terminate(s *v1.PodStatus, at time.Time, exitCode int32, reason string) {
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range list {
			c := &list[i]
			if c.State.Terminated != nil {
				continue
			}
			started, code, why := at, int32(exitCodeKilled), reasonUnknownStatus
			if c.State.Running != nil {
				started, code, why = c.State.Running.StartedAt.Time, exitCode, reason
			}
			c.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: code, Reason: why, StartedAt: *stamp(started), FinishedAt: *stamp(at),
			}}
			c.Ready = false
		}
	}
	if len(s.Conditions) > 0 {
		setReady(s, false, at, reasonPodFailed)
	}
}

// containerState is what containerStatuses writes for one container.
type containerState struct {
	state, last v1.ContainerState
	started     bool
	ready       bool
	restarts    int32
}

// containerStatuses builds one status per container of list, in spec order.
func containerStatuses(pod *v1.Pod, list []v1.Container, of func(v1.Container) containerState) []v1.ContainerStatus {
	out := make([]v1.ContainerStatus, 0, len(list))
	for _, c := range list {
		st := of(c)
		cs := v1.ContainerStatus{
			Name:                 c.Name,
			Image:                c.Image,
			State:                st.state,
			LastTerminationState: st.last,
			Ready:                st.ready,
			RestartCount:         st.restarts,
			Started:              &st.started,
		}
		if st.state.Waiting == nil || st.restarts > 0 {
			cs.ImageID = "sandbox://" + c.Image
			cs.ContainerID = "sandbox://" + string(pod.UID) + "/" + c.Name
		}
		out = append(out, cs)
	}
	return out
}

// setReady sets both the ContainersReady and Ready conditions.
func setReady(s *v1.PodStatus, ready bool, since time.Time, reason string) {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	setCondition(s, v1.ContainersReady, status, since, reason)
	setCondition(s, v1.PodReady, status, since, reason)
}

// setCondition sets condition t of s, adding it if absent. The transition time is
// kept when the status does not change, so repeated renders are identical.
func setCondition(s *v1.PodStatus, t v1.PodConditionType, status v1.ConditionStatus, since time.Time, reason string) {
	c := v1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: *stamp(since)}
	for i := range s.Conditions {
		if s.Conditions[i].Type != t {
			continue
		}
		if s.Conditions[i].Status == status {
			c.LastTransitionTime = s.Conditions[i].LastTransitionTime
		}
		s.Conditions[i] = c
		return
	}
	s.Conditions = append(s.Conditions, c)
}

// stamp is t as the API stores it: UTC, whole seconds.
func stamp(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t).Rfc3339Copy()
	return &mt
}

// setAddresses sets the pod's host IP (the node's internal IP, if it has one) and
// its pod IP, as the kubelet does once the pod sandbox exists.
func setAddresses(s *v1.PodStatus, node *v1.Node, podIP string) {
	for _, a := range node.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			s.HostIP, s.HostIPs = a.Address, []v1.HostIP{{IP: a.Address}}
			break
		}
	}
	s.PodIP, s.PodIPs = podIP, []v1.PodIP{{IP: podIP}}
}

// podIP is the n-th (from 1) pod IP the kubelet hands out, from 10.128.0.0/10.
func podIP(n int) string {
	return fmt.Sprintf("10.%d.%d.%d", 128+(n>>16)&63, (n>>8)&255, n&255)
}
