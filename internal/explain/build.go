package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/source"
)

// check is one step's outcome: its evidence and, when it fails, the verdict.
type check struct {
	evidence []string
	fail     *Verdict
}

func ok(evidence ...string) check { return check{evidence: evidence} }

func failed(summary, fix string, evidence ...string) check {
	return check{evidence: evidence, fail: &Verdict{Summary: summary, Fix: fix}}
}

// Build walks the six steps over the facts and returns the report. Steps after the first
// failing one are still checked when they can be (a later problem is worth knowing), but
// the verdict names the first.
func Build(f Facts) Report {
	r := Report{Group: groupName(f)}
	if f.Lifecycle != nil {
		r.Phase = f.Lifecycle.Phase
	}
	steps := []struct {
		title string
		run   func(Facts) (check, bool)
	}{
		{"objects exist", stepObjects},
		{"API served and muster owns the group", stepOwnership},
		{"membership", stepMembership},
		{"admission and fit", stepAdmission},
		{"after placement", stepAfterPlacement},
		{"timeout", stepTimeout},
	}
	blocked := false
	for i, s := range steps {
		step := Step{Number: i + 1, Title: s.title}
		if blocked {
			step.Skipped, step.OK = true, true
			step.Evidence = []string{"not checked: an earlier step must pass first"}
			r.Steps = append(r.Steps, step)
			continue
		}
		c, canContinue := s.run(f)
		step.Evidence, step.OK = c.evidence, c.fail == nil
		if c.fail != nil && r.Verdict.Step == 0 {
			r.Verdict = *c.fail
			r.Verdict.Step = i + 1
		}
		blocked = !canContinue
		r.Steps = append(r.Steps, step)
	}
	if r.Verdict.Step == 0 {
		r.Verdict.Summary = healthy(f)
	}
	return r
}

func groupName(f Facts) string {
	if f.Spec.Key != "" {
		return fmt.Sprintf("%s %s/%s", f.Spec.Source, f.Spec.Namespace, f.Spec.Name)
	}
	return fmt.Sprintf("%s/%s in %s", f.Kind, f.Name, f.Namespace)
}

func healthy(f Facts) string {
	if f.Lifecycle == nil {
		return "no problem found"
	}
	switch lifecycle.Phase(f.Lifecycle.Phase) {
	case lifecycle.Finished:
		return "the group finished"
	case lifecycle.Running:
		ready := 0
		for _, p := range f.Members {
			if podReady(p) {
				ready++
			}
		}
		return fmt.Sprintf("the group is running: %d of minMember %d members Ready", ready, f.Spec.MinMember)
	}
	return fmt.Sprintf("no problem found; the group is %s", f.Lifecycle.Phase)
}

// stepObjects: the parent object and its group exist in the namespace.
func stepObjects(f Facts) (check, bool) {
	var ev []string
	if f.ParentProblem != "" && f.ParentUnserved {
		return failed(f.ParentProblem, "install the operator that serves "+f.Kind+" (its CRD), or check the kind", f.ParentProblem), false
	}
	if f.ParentProblem != "" {
		return failed(f.ParentProblem, "check the name and namespace (kubectl get "+f.Kind+" -n "+f.Namespace+")", f.ParentProblem), false
	}
	if f.Parent != nil {
		ev = append(ev, fmt.Sprintf("%s %s/%s exists", f.Parent.GetKind(), f.Namespace, f.Parent.GetName()))
	}
	if !f.GroupFound {
		msg := fmt.Sprintf("no %s named %s in namespace %s", f.GroupAPI, f.Spec.Name, f.Namespace)
		fix := "create the group object"
		switch {
		case f.TemplateGroup:
			// The plain group of a batch Job whose pods are gone: they come back.
			kind, name := f.Parent.GetKind(), f.Parent.GetName()
			msg = fmt.Sprintf("%s %s has no pods now; its pod template joins %s %s", kind, name, f.GroupAPI, f.Spec.Name)
			suspended, _, _ := unstructured.NestedBool(f.Parent.Object, "spec", "suspend")
			if reason, byMuster := f.Parent.GetAnnotations()[musterv1alpha1.SuspendedAnnotation]; suspended && byMuster {
				msg, fix = suspendedByMuster(f, reason)
			} else if suspended {
				msg += "; the Job is suspended (spec.suspend: true) and creates none"
				fix = "resume the Job (spec.suspend: false)"
			} else {
				fix = fmt.Sprintf("wait for the Job to create them: after failed pods a Job waits 10s, doubled for each failure up to 6m (kubectl describe job %s)", name)
			}
		case f.Parent != nil && (f.Parent.GetKind() == "Job" || f.Parent.GetKind() == "JobSet"):
			// A batch Job or a JobSet makes no group object of its own: its pods name one.
			msg = fmt.Sprintf("no pod of %s %s joins a group, and no %s is named %s", f.Parent.GetKind(), f.Parent.GetName(), f.GroupAPI, f.Spec.Name)
			fix = fmt.Sprintf("give the pod template the label %s: %s and the annotation %s (the group's minimum), or the label of a PodGroup; see docs/integrations.md",
				musterv1alpha1.GroupLabel, f.Parent.GetName(), musterv1alpha1.MinMemberAnnotation)
		case f.Parent != nil:
			fix = "run the training operator with --gang-scheduler-name=" + f.SchedulerNames[0] + " so that it creates the PodGroup"
		}
		return failed(msg, fix, append(ev, msg)...), false
	}
	ev = append(ev, fmt.Sprintf("%s %s/%s exists", f.GroupAPI, f.Namespace, f.Spec.Name))
	return ok(strings.Join(ev, "; ")), true
}

// suspendedByMuster explains a Job that muster suspended to evict its group (reason),
// from the group's record on the Job: it is resumed when the backoff ends, or stays
// suspended because the group Failed.
func suspendedByMuster(f Facts, reason string) (msg, fix string) {
	name := f.Parent.GetName()
	msg = fmt.Sprintf("muster suspended Job %s to evict its group %s (%s)", name, f.Spec.Name, reason)
	lc := f.Lifecycle
	switch {
	case lc != nil && lc.Phase == string(lifecycle.Failed):
		msg += "; the group Failed: " + lc.Message
		return msg, fmt.Sprintf("fix what made its attempts fail (kubectl get events), then delete Job %s and create it again; muster keeps it suspended", name)
	case lc != nil && lc.WakeAt != nil && lc.WakeAt.After(f.Now):
		msg += fmt.Sprintf("; muster resumes it when the group's backoff ends, at %s (in %s)",
			lc.WakeAt.UTC().Format(time.RFC3339), lc.WakeAt.Sub(f.Now).Round(time.Second))
	default:
		msg += "; muster resumes it now"
	}
	return msg, "wait: muster resumes the Job, and its pods are scheduled as a group again"
}

// stepOwnership: the group's API is served and every member names muster.
func stepOwnership(f Facts) (check, bool) {
	if !f.GroupServed {
		msg := "the cluster does not serve " + f.GroupAPI
		return failed(msg, "install the CRD from deploy/crd (or enable the API)", msg), false
	}
	var others, names []string
	for _, p := range f.Members {
		name := p.Spec.SchedulerName
		switch {
		case !slices.Contains(f.SchedulerNames, name):
			others = append(others, fmt.Sprintf("%s (schedulerName %q)", p.Name, name))
		case !slices.Contains(names, name):
			names = append(names, name)
		}
	}
	if len(others) > 0 {
		msg := fmt.Sprintf("%d of %d members are not muster's: %s", len(others), len(f.Members), strings.Join(others, ", "))
		fix := fmt.Sprintf("set spec.schedulerName: %s on every member's pod template (Polyaxon: environment.schedulerName)", f.SchedulerNames[0])
		if len(f.SchedulerNames) > 1 {
			fix += fmt.Sprintf("; muster also schedules pods of %s (additionalSchedulerNames)", strings.Join(f.SchedulerNames[1:], ", "))
		}
		return failed(msg, fix, msg), true
	}
	if len(names) == 0 {
		names = f.SchedulerNames[:1]
	}
	return ok(fmt.Sprintf("%s served; %d members with schedulerName %s", f.GroupAPI, len(f.Members), strings.Join(names, " or "))), true
}

// stepMembership: members found vs minMember, the owner's declared replicas, pods of the
// owner outside the group, and per-pod requests.
func stepMembership(f Facts) (check, bool) {
	live := 0
	for _, p := range f.Members {
		if p.Status.Phase != corev1.PodFailed {
			live++
		}
	}
	ev := []string{source.Gathering(f.Spec, live, f.Parent)}
	ev = append(ev, shapes(f.Members)...)
	if len(f.Spec.Invalid) > 0 {
		msg := strings.Join(f.Spec.Invalid, "; ")
		return failed("the group is invalid: "+msg, "fix the named field", append(ev, msg)...), false
	}
	if len(f.Outside) > 0 {
		names := podNames(f.Outside)
		msg := fmt.Sprintf("%d pod(s) of the same owner are outside the group: %s", len(f.Outside), names)
		ev = append(ev, msg)
		if live < f.Spec.MinMember {
			return failed(msg, "put them in the group ("+source.JoinedBy(f.Spec.Source)+") or lower minMember to the pods that are in it", ev...), false
		}
	}
	if live < f.Spec.MinMember {
		return failed(fmt.Sprintf("%d of minMember %d members exist", live, f.Spec.MinMember),
			"create the missing members, or check that minMember counts only the pods the controller creates", ev...), false
	}
	if msg := taskShort(f); msg != "" {
		return failed(msg, "create the task's missing pods, or check that minTaskMember counts only the pods the controller creates, each annotated with its task", ev...), false
	}
	return ok(ev...), true
}

// taskShort says which of the group's tasks, in name order, has fewer live member
// pods than its minimum (spec.minTaskMember), "" when none does.
func taskShort(f Facts) string {
	have := map[string]int{}
	for _, p := range f.Members {
		if p.Status.Phase != corev1.PodFailed {
			have[p.Annotations[engine.TaskAnnotation]]++
		}
	}
	t, short := placement.ShortTask(f.Spec.TaskMinimums, have)
	if !short {
		return ""
	}
	return fmt.Sprintf("task %s has %d of its minimum %d member pods (pods annotated %s: %s)", t.Task, t.Members, t.Minimum, engine.TaskAnnotation, t.Task)
}

// shapes lists the members' distinct requests: "4 × {cpu: 2, nvidia.com/gpu: 1} (bert-worker-0 ...)".
func shapes(pods []*corev1.Pod) []string {
	type shape struct {
		text  string
		count int
		first string
	}
	var out []*shape
	for _, p := range pods {
		r := cluster.PodRequests(p)
		delete(r, corev1.ResourcePods)
		text := r.String()
		i := slices.IndexFunc(out, func(s *shape) bool { return s.text == text })
		if i < 0 {
			out = append(out, &shape{text: text, first: p.Name})
			i = len(out) - 1
		}
		out[i].count++
	}
	lines := make([]string, len(out))
	for i, s := range out {
		lines[i] = fmt.Sprintf("requests %s × %d (e.g. %s)", s.text, s.count, s.first)
	}
	return lines
}

func podNames(pods []*corev1.Pod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// admitted reports whether the lifecycle record shows the group holding a placement.
func admitted(f Facts) bool {
	if f.Lifecycle == nil {
		return false
	}
	switch lifecycle.Phase(f.Lifecycle.Phase) {
	case lifecycle.Binding, lifecycle.Starting, lifecycle.Running, lifecycle.Recovering, lifecycle.Finished:
		return true
	}
	return false
}
