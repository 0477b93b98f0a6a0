package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/placement"
)

// TaskAnnotation names the task of a job a member pod belongs to: Volcano's job
// controller and the Kubeflow training operator (with Volcano gang scheduling) annotate
// each pod with its task or replica type, as in "ps" or "worker".
const TaskAnnotation = "volcano.sh/task-spec"

// taskOf returns the task member pod p belongs to, "" for none.
func taskOf(p *corev1.Pod) string { return p.Annotations[TaskAnnotation] }

// taskMissing says which task, in name order, has fewer member pods than its minimum,
// "" when none does. It counts the members observe does: live, not going away.
func (g *group) taskMissing() string {
	task, have, n := g.shortTask(func(string, *corev1.Pod) bool { return true })
	if task == "" {
		return ""
	}
	return fmt.Sprintf("task %s: %d of the %d member pods its minimum (%s) asks for exist", task, have, n, TaskAnnotation)
}

// taskNotReady says which task, in name order, has fewer Ready (or Succeeded) members
// than its minimum, "" when none does.
func (g *group) taskNotReady() string {
	task, have, n := g.shortTask(func(_ string, p *corev1.Pod) bool { return podReady(p) })
	if task == "" {
		return ""
	}
	return fmt.Sprintf("task %s: %d of its minimum %d members ready", task, have, n)
}

// taskFailed says which task, in name order, has a member among failed (the members
// placed in the current attempt that failed for good) and fewer members placed in the
// attempt and not failed (left, per task) than its minimum, "" when none does: the
// attempt cannot be whole.
func (g *group) taskFailed(failed []string, left map[string]int) string {
	if len(g.spec.TaskMinimums) == 0 {
		return ""
	}
	minimums := map[string]int{} // of the tasks with a failed member
	for _, key := range failed {
		task := taskOf(g.members[key])
		if n, ok := g.spec.TaskMinimums[task]; ok {
			minimums[task] = n
		}
	}
	t, _ := placement.ShortTask(minimums, left)
	if t.Task == "" {
		return ""
	}
	return fmt.Sprintf("task %s: %d of its minimum %d members placed in the attempt are left", t.Task, t.Members, t.Minimum)
}

// shortTask returns the first task, in name order, whose members that count (live, not
// going away, and counted) are fewer than its minimum, with how many count and the
// minimum; "" when there is none.
func (g *group) shortTask(counted func(key string, p *corev1.Pod) bool) (task string, have, minimum int) {
	if len(g.spec.TaskMinimums) == 0 {
		return "", 0, 0
	}
	counts := map[string]int{}
	for key, p := range g.members {
		if live(p) && p.DeletionTimestamp == nil && !g.evicting[key] && counted(key, p) {
			counts[taskOf(p)]++
		}
	}
	t, _ := placement.ShortTask(g.spec.TaskMinimums, counts)
	return t.Task, t.Members, t.Minimum
}

// taskNeeds returns, for the placement of members (the group's unplaced ones), each
// task's minimum less its members bound already, the tasks that need none left out;
// nil when the group has no minimums. It sets each member's Task, and moves the members
// the needs ask for first, in order, so that a placement of the first MinMember members
// (the queue's fallback over quota, the forecast) has them. short names a task whose
// unplaced members are fewer than it needs.
func (g *group) taskNeeds(members []placement.Member) (needs map[string]int, short string) {
	if len(g.spec.TaskMinimums) == 0 {
		return nil, ""
	}
	bound := map[string]int{}
	for key, p := range g.members {
		if g.boundLiveMember(key, p) {
			bound[taskOf(p)]++
		}
	}
	for task, n := range g.spec.TaskMinimums {
		if left := n - bound[task]; left > 0 {
			if needs == nil {
				needs = map[string]int{}
			}
			needs[task] = left
		}
	}
	taken := map[string]int{}
	var first, rest []placement.Member
	for _, m := range members {
		m.Task = taskOf(m.Pod)
		if m.Task != "" && taken[m.Task] < needs[m.Task] {
			taken[m.Task]++
			first = append(first, m)
		} else {
			rest = append(rest, m)
		}
	}
	copy(members, append(first, rest...))
	t, _ := placement.ShortTask(needs, taken)
	return needs, t.Task
}
