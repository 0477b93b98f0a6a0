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
		w := waitOf(lc)
		why := firstNonEmpty(w.text(lc), lc.Message)
		return failed("the group can never be admitted as it is: "+why, impossibleFix(w), append(append(ev, why), claimLines(f)...)...), false
	case lifecycle.Queued:
		w := waitOf(lc)
		why := firstNonEmpty(w.text(lc), "waiting for the next scheduling pass")
		ev = append(append(ev, why), whatIf(f, w)...)
		if a, ok := preemptedInPlace(lc); ok {
			ev = append(ev, fmt.Sprintf("attempt %d was %s in %s; queued again in its place (a preemption uses no retry)%s",
				a.Number, a.Message, a.Stage, preemptionHint(a.Preemption)))
		}
		ev = append(ev, claimLines(f)...)
		ev = append(ev, expectedStartText(lc))
		if f.FitUnread != "" {
			ev = append(ev, f.FitUnread)
		}
		if f.FitFrom != "" {
			ev = append(ev, f.FitFrom)
		}
		return failed("waiting in queue "+lc.Queue+": "+why, waitingFix(w, lc.Queue, cohortOf(f)), ev...), false
	}
	if lc.AdmittedAt != nil {
		ev = append(ev, fmt.Sprintf("attempt %d admitted at %s with a node for every member",
			lc.Attempt, lc.AdmittedAt.UTC().Format(time.RFC3339)))
	} else {
		ev = append(ev, fmt.Sprintf("admitted %d time(s)", lc.Attempt))
	}
	ev = append(ev, claimLines(f)...)
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
	var fix string
	for _, p := range f.Members {
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		if podReady(p) {
			ready++
			continue
		}
		if why, how := podProblem(p, f.PodEvents); why != "" {
			problems = append(problems, p.Name+": "+why)
			fix = firstNonEmpty(fix, how)
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
		return failed(problems[0], fix, ev...), true
	}
	if len(waiting) > 0 {
		ev = append(ev, "not Ready yet, no error reported: "+strings.Join(waiting, ", "))
	}
	return ok(ev...), true
}

func podReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || cluster.PodReady(p)
}

// The fixes of podProblem, by what keeps the pod from becoming Ready.
const (
	imageFix  = "fix the image reference or the registry credentials (imagePullSecrets)"
	initFix   = "read the init container's logs (kubectl logs POD -c CONTAINER) and fix what it waits for"
	volumeFix = "check the volume and its claim (kubectl describe pod POD)"
	podFix    = "read the pod's logs and events (kubectl describe pod POD)"
)

// podProblem reports the first thing that keeps a bound pod from becoming Ready, as the
// kubelet reported it, and the fix to try for it; "" when it reported nothing wrong.
func podProblem(p *corev1.Pod, events []corev1.Event) (problem, fix string) {
	if p.Status.Phase == corev1.PodFailed {
		return fmt.Sprintf("pod failed: %s %s", p.Status.Reason, p.Status.Message), podFix
	}
	for _, s := range p.Status.InitContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return fmt.Sprintf("init container %s: %s %s", s.Name, w.Reason, w.Message), waitFix(w.Reason, initFix)
		}
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("init container %s exited with code %d: %s", s.Name, t.ExitCode, t.Reason), initFix
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && isBadWait(w.Reason) {
			return fmt.Sprintf("container %s: %s %s", s.Name, w.Reason, w.Message), waitFix(w.Reason, podFix)
		}
	}
	for _, e := range events {
		if e.InvolvedObject.Name == p.Name && (e.Reason == "FailedMount" || e.Reason == "FailedAttachVolume") {
			return fmt.Sprintf("volume: %s %s", e.Reason, e.Message), volumeFix
		}
	}
	return "", ""
}

// waitFix is the fix for a container waiting for reason: the image fix for the
// kubelet's image reasons, otherwise fix.
func waitFix(reason, fix string) string {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		return imageFix
	}
	return fix
}

func isBadWait(reason string) bool {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
		"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		return true
	}
	return false
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
			return failed(msg, preemptionFix(last.preemption), msg), true
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

type attemptSummary struct{ stage, reason, message, preemption string }

func lastAttempt(attempts []musterv1alpha1.AttemptRecord) attemptSummary {
	if len(attempts) == 0 {
		return attemptSummary{stage: "?", message: "no attempt recorded"}
	}
	a := attempts[len(attempts)-1]
	return attemptSummary{stage: a.Stage, reason: a.Reason, message: a.Message, preemption: a.Preemption}
}

// attemptsOf renders a count of attempts: "1 attempt", "3 attempts".
func attemptsOf(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}
