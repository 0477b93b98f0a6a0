package explain

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// expectedStartText renders a queued group's expected start, or why it is unknown.
func expectedStartText(lc *musterv1alpha1.GroupLifecycle) string {
	if lc.ExpectedStart != nil {
		return "expected start: " + lc.ExpectedStart.UTC().Format(time.RFC3339)
	}
	return "expected start: unknown: " + firstNonEmpty(lc.ExpectedStartUnknown, "not recorded")
}

// stepAdmission: queue, quota and the scheduler's diagnosis of fit.
func stepAdmission(f Facts) (check, bool) {
	lc := f.Lifecycle
	if lc == nil {
		msg := "muster has recorded nothing for this group"
		return failed(msg, "check that muster is running and leading (kubectl -n muster-system get pods,leases)", msg), false
	}
	ev := []string{"queue " + lc.Queue + quotaText(f)}
	switch lifecycle.Phase(lc.Phase) {
	case lifecycle.Gathering:
		return ok(append(ev, "not queued yet: the group is still gathering members")...), true
	case lifecycle.Impossible:
		why := firstNonEmpty(lc.Waiting, lc.Message)
		return failed("the group can never be admitted as it is: "+why,
			impossibleFix(lc.WaitingKind), append(ev, why)...), false
	case lifecycle.Queued:
		why := firstNonEmpty(lc.Waiting, "waiting for the next scheduling pass")
		ev = append(ev, why)
		if f.Fit != nil {
			ev = append(ev, "now: "+f.Fit.String())
		}
		if a, ok := preemptedInPlace(lc); ok {
			ev = append(ev, fmt.Sprintf("attempt %d was %s in %s; queued again in its place (a preemption uses no retry)", a.Number, a.Message, a.Stage))
		}
		ev = append(ev, expectedStartText(lc))
		if f.FitUnread != "" {
			ev = append(ev, f.FitUnread)
		}
		if f.FitFrom != "" {
			ev = append(ev, f.FitFrom)
		}
		return failed("waiting in queue "+lc.Queue+": "+why, waitingFix(lc.WaitingKind, lc.Queue, cohortOf(f), why), ev...), false
	}
	if lc.AdmittedAt != nil {
		ev = append(ev, fmt.Sprintf("attempt %d admitted at %s with a node for every member",
			lc.Attempt, lc.AdmittedAt.UTC().Format(time.RFC3339)))
	} else {
		ev = append(ev, fmt.Sprintf("admitted %d time(s)", lc.Attempt))
	}
	return ok(ev...), true
}

// preemptedInPlace returns the group's last attempt when it was preempted (or its
// quota reclaimed) and the group waits again in its place for its next attempt.
func preemptedInPlace(lc *musterv1alpha1.GroupLifecycle) (musterv1alpha1.AttemptRecord, bool) {
	if len(lc.Attempts) == 0 {
		return musterv1alpha1.AttemptRecord{}, false
	}
	a := lc.Attempts[len(lc.Attempts)-1]
	return a, a.Reason == lifecycle.ReasonPreempted && a.Number == lc.Attempt
}

func quotaText(f Facts) string {
	if f.Queue == nil || len(f.Queue.Spec.Quota) == 0 {
		return " (no quota)"
	}
	quota, used := cluster.FromList(f.Queue.Spec.Quota), cluster.FromList(f.Queue.Status.Used)
	var parts []string
	for _, name := range quota.Names() {
		parts = append(parts, fmt.Sprintf("%s %s of %s used", name, cluster.Format(name, used[name]), cluster.Format(name, quota[name])))
	}
	if c := cohortOf(f); c != "" {
		parts = append(parts, "cohort "+c)
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// cohortOf names the cohort of the group's queue, if any.
func cohortOf(f Facts) string {
	if f.Queue == nil {
		return ""
	}
	return f.Queue.Spec.Cohort
}

func impossibleFix(kind string) string {
	if kind == "QuotaNeverEnough" {
		return "raise the Queue's spec.quota or submit to a queue with more quota; retries will not help"
	}
	return "change the member shape (requests, nodeSelector, tolerations, topology) or add nodes that can hold it; retries will not help"
}

func waitingFix(kind, queue, cohort, why string) string {
	switch {
	case kind == "QuotaExceeded" && cohort != "" && strings.Contains(why, "within queue "+queue+"'s quota"):
		return "nothing to do: the group is within its queue's quota and muster takes back what cohort " + cohort +
			" lent, evicting borrowing groups (named above once chosen); it runs when they are gone"
	case kind == "QuotaExceeded" && cohort != "":
		return "wait: for queue " + queue + "'s running groups to finish, or for what it lent to cohort " + cohort +
			" to be reclaimed (muster evicts borrowing groups for a group within its queue's quota); or raise spec.quota, or use another queue"
	case kind == "QuotaExceeded":
		return "wait for queue " + queue + "'s running groups to finish, raise its spec.quota, or use another queue"
	case kind == "QueueNotFound":
		return "create Queue " + queue + " or fix the group's muster.dev/queue"
	case kind == "QueueNotAllowed":
		return "name a queue whose spec.namespaceSelector selects this namespace (kubectl muster get queues lists them), " +
			"or ask the queue's owner to select the namespace; the group holds nothing meanwhile"
	case kind == "QueueAmbiguous":
		return "name one of the queues with the muster.dev/queue annotation, or ask the platform team to narrow their namespaceSelectors"
	case kind == "Reserved":
		return "wait: capacity is reserved for a group that has waited longer"
	}
	return "wait for capacity to free up (the group holds nothing meanwhile), or ask for less"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// stepAfterPlacement: image pulls, volume mounts, init containers and readiness of the
// bound members.
func stepAfterPlacement(f Facts) (check, bool) {
	bound, ready := 0, 0
	var problems, waiting []string
	for _, p := range f.Members {
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		if podReady(p) {
			ready++
			continue
		}
		if why := podProblem(p, f.PodEvents); why != "" {
			problems = append(problems, p.Name+": "+why)
		} else {
			waiting = append(waiting, p.Name)
		}
	}
	if bound == 0 {
		return ok("no member is bound yet"), true
	}
	ev := []string{fmt.Sprintf("%d of %d bound members Ready", ready, bound)}
	if len(problems) > 0 {
		ev = append(ev, problems...)
		return failed(problems[0], problemFix(problems[0]), ev...), true
	}
	if len(waiting) > 0 {
		ev = append(ev, "not Ready yet, no error reported: "+strings.Join(waiting, ", "))
	}
	return ok(ev...), true
}

func podReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || cluster.PodReady(p)
}

// podProblem reports the first thing that keeps a bound pod from becoming Ready, as the
// kubelet reported it.
func podProblem(p *corev1.Pod, events []corev1.Event) string {
	if p.Status.Phase == corev1.PodFailed {
		return fmt.Sprintf("pod failed: %s %s", p.Status.Reason, p.Status.Message)
	}
	for _, s := range p.Status.InitContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return fmt.Sprintf("init container %s: %s %s", s.Name, w.Reason, w.Message)
		}
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("init container %s exited with code %d: %s", s.Name, t.ExitCode, t.Reason)
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && isBadWait(w.Reason) {
			return fmt.Sprintf("container %s: %s %s", s.Name, w.Reason, w.Message)
		}
	}
	for _, e := range events {
		if e.InvolvedObject.Name == p.Name && (e.Reason == "FailedMount" || e.Reason == "FailedAttachVolume") {
			return fmt.Sprintf("volume: %s %s", e.Reason, e.Message)
		}
	}
	return ""
}

func isBadWait(reason string) bool {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
		"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		return true
	}
	return false
}

func problemFix(problem string) string {
	switch {
	case strings.Contains(problem, "Image"):
		return "fix the image reference or the registry credentials (imagePullSecrets)"
	case strings.Contains(problem, "init container"):
		return "read the init container's logs (kubectl logs POD -c CONTAINER) and fix what it waits for"
	case strings.Contains(problem, "volume"):
		return "check the volume and its claim (kubectl describe pod POD)"
	}
	return "read the pod's logs and events (kubectl describe pod POD)"
}

// stepTimeout: when the group's timer fires and what happens then.
func stepTimeout(f Facts) (check, bool) {
	lc := f.Lifecycle
	if lc == nil {
		return ok("no lifecycle recorded"), true
	}
	left := max(lc.MaxRetries-lc.Failures, 0)
	at := func() string {
		if lc.WakeAt == nil {
			return "not scheduled"
		}
		return fmt.Sprintf("%s (in %s)", lc.WakeAt.UTC().Format(time.RFC3339), lc.WakeAt.Sub(f.Now).Round(time.Second))
	}
	switch lifecycle.Phase(lc.Phase) {
	case lifecycle.Binding, lifecycle.Starting:
		return ok(fmt.Sprintf("start-timeout %s fires at %s unless %d members are Ready; then every member is evicted and the group retries after a backoff (%d of %d retries left)",
			lc.StartTimeout.Duration, at(), lc.MinMember, left, lc.MaxRetries)), true
	case lifecycle.Recovering:
		return ok(fmt.Sprintf("recovery-timeout %s fires at %s unless %d members are Ready again; then the whole group is evicted and requeued (%d of %d retries left)",
			lc.RecoveryTimeout.Duration, at(), lc.MinMember, left, lc.MaxRetries)), true
	case lifecycle.Running:
		return ok(fmt.Sprintf("no timer; if a member is lost, recovery-timeout %s applies", lc.RecoveryTimeout.Duration)), true
	case lifecycle.Backoff:
		last := lastAttempt(lc.Attempts)
		if last.reason == lifecycle.ReasonPreempted {
			msg := fmt.Sprintf("attempt %d was %s in %s; queued again at %s; a preemption uses no retry (%d of %d retries left)",
				lc.Attempt, last.message, last.stage, at(), left, lc.MaxRetries)
			fix := "if the job must not be preempted, give its pods a PriorityClass at least as high as the preemptor's, or run it in a Queue of higher priority"
			if strings.HasPrefix(last.message, "reclaimed by") {
				fix = "the job ran on quota its queue borrowed from its cohort, and the lending queue took it back; jobs that must not be reclaimed should fit their own queue's spec.quota"
			}
			return failed(msg, fix, msg), true
		}
		msg := fmt.Sprintf("attempt %d failed in %s: %s; requeued at %s (%d of %d retries left)", lc.Attempt, last.stage, last.message, at(), left, lc.MaxRetries)
		if last.reason == lifecycle.ReasonMemberFailedToStart {
			return failed(msg, "fix what the container named above failed on: its pod was evicted with the group, so read its logs from your log store, or follow the next attempt's pod (kubectl logs -f POD -c CONTAINER)", msg), true
		}
		return failed(msg, "find the cause in the steps above (image, init, readiness); a longer timeout will not repair a bad image", msg), true
	case lifecycle.Failed:
		if lc.Reason == lifecycle.ReasonOwnerFailed {
			msg := "the group's owner failed, so muster stopped waiting for its members: " + lc.Message
			return failed(msg, "read the owner's status and its failed pods' logs (the owner keeps them), fix the cause, then delete and resubmit the job", msg), true
		}
		ev := []string{fmt.Sprintf("failed after %s; no more retries", attemptsOf(lc.Attempt))}
		for _, a := range lc.Attempts {
			ev = append(ev, fmt.Sprintf("attempt %d: %s in %s after %s: %s", a.Number, a.Reason, a.Stage,
				a.EndedAt.Sub(a.AdmittedAt.Time).Round(time.Second), a.Message))
		}
		return failed(ev[0], "fix the cause in the attempt history, then delete and resubmit the job", ev...), true
	}
	return ok("no timer: the group holds nothing while it is " + lc.Phase), true
}

type attemptSummary struct{ stage, reason, message string }

func lastAttempt(attempts []musterv1alpha1.AttemptRecord) attemptSummary {
	if len(attempts) == 0 {
		return attemptSummary{stage: "?", message: "no attempt recorded"}
	}
	a := attempts[len(attempts)-1]
	return attemptSummary{stage: a.Stage, reason: a.Reason, message: a.Message}
}

// attemptsOf renders a count of attempts: "1 attempt", "3 attempts".
func attemptsOf(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}
