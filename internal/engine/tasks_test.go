package engine_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/sim"
)

// taskPod is a member pod of task, annotated as Volcano's job controller does.
func taskPod(name, task string, b func(*gt.PodBuilder) *gt.PodBuilder) *corev1.Pod {
	p := b(gt.Pod(name)).Obj()
	p.Annotations = map[string]string{engine.TaskAnnotation: task}
	return p
}

// TestTaskMinimums: a Volcano PodGroup's minTaskMember, as GroupSpec.TaskMinimums. The
// group gathers while a task has fewer pods than its minimum, whatever minMember says,
// and its admission places each task's minimum: on two nodes of 4 CPUs and 2 GPUs,
// four GPU workers placed first would leave no room for the parameter server's 3 CPUs,
// and minMember 3 alone admits them without it.
func TestTaskMinimums(t *testing.T) {
	key := "Volcano/default/job"
	worker := func(b *gt.PodBuilder) *gt.PodBuilder { return b.GPU(1).Req(corev1.ResourceCPU, "1") }
	for _, tc := range []struct {
		name     string
		minimums map[string]int
		psBound  bool
	}{
		{"minMember alone", nil, false},
		{"with the task minimums", map[string]int{"ps": 1, "worker": 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine()
			for i := range 2 {
				e.SetNode(gt.Node("n-" + strconv.Itoa(i)).GPU(2).CPU("4").Obj())
			}
			e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Volcano, Namespace: "default", Name: "job",
				MinMember: 3, TaskMinimums: tc.minimums})
			for i := range 4 {
				e.SetPod(taskPod("job-worker-"+strconv.Itoa(i), "worker", worker), key)
			}
			out := e.Step(sim.Epoch)
			var bound []string
			for _, b := range out.Binds() {
				bound = append(bound, b.Pod)
			}
			st, _ := e.Group(key)
			if tc.minimums != nil {
				if len(out.Binds()) != 0 || st.Phase != lifecycle.Gathering {
					t.Fatalf("without its ps the group is %s with binds %v, want Gathering and none", st.Phase, out.Binds())
				}
				want := "task ps: 0 of the 1 member pods its minimum (volcano.sh/task-spec) asks for exist"
				if !strings.Contains(st.Message, want) {
					t.Fatalf("message %q does not contain %q", st.Message, want)
				}
			}
			e.SetPod(taskPod("job-ps-0", "ps", func(b *gt.PodBuilder) *gt.PodBuilder { return b.Req(corev1.ResourceCPU, "3") }), key)
			out = e.Step(sim.Epoch.Add(1))
			for _, b := range out.Binds() {
				bound = append(bound, b.Pod)
			}
			if psBound := slices.Contains(bound, "default/job-ps-0"); psBound != tc.psBound || len(bound) < 3 {
				t.Fatalf("bound %v: ps bound %t, want %t, and at least minMember 3", bound, psBound, tc.psBound)
			}
		})
	}
}

// psAndWorkers is an engine over one node of 4 GPUs and 16 CPUs with group key, of
// minMember 3 and the task minimums given, whose members are a parameter server (task
// ps) and three one-GPU workers (task worker), by key.
func psAndWorkers(key string, minimums map[string]int) (*engine.Engine, map[string]*corev1.Pod) {
	e := sim.NewEngine()
	e.SetNode(gt.Node("n-0").GPU(4).CPU("16").Obj())
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Volcano, Namespace: "default", Name: "job",
		MinMember: 3, TaskMinimums: minimums})
	pods := map[string]*corev1.Pod{"default/job-ps-0": taskPod("job-ps-0", "ps", func(b *gt.PodBuilder) *gt.PodBuilder { return b })}
	for i := range 3 {
		p := taskPod("job-worker-"+strconv.Itoa(i), "worker", func(b *gt.PodBuilder) *gt.PodBuilder { return b.GPU(1) })
		pods["default/"+p.Name] = p
	}
	for _, p := range pods {
		e.SetPod(p, key)
	}
	return e, pods
}

// TestTaskMinimumsReady: with task minimums a group is Running only when each task has
// its minimum of Ready members: three Ready workers meet minMember 3, but not the
// parameter server's minimum.
func TestTaskMinimumsReady(t *testing.T) {
	key := "Volcano/default/job"
	e, pods := psAndWorkers(key, map[string]int{"ps": 1, "worker": 2})
	out := e.Step(sim.Epoch)
	if len(out.Binds()) != 4 {
		t.Fatalf("binds %v, want the 4 members", out.Binds())
	}
	ready := func(name string) {
		p := pods[name].DeepCopy()
		p.Spec.NodeName = "n-0"
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		pods[name] = p
		e.SetPod(p, key)
	}
	for i := range 3 {
		ready("default/job-worker-" + strconv.Itoa(i))
	}
	e.Step(sim.Epoch.Add(1))
	if st, _ := e.Group(key); st.Phase != lifecycle.Starting {
		t.Fatalf("with the workers Ready and not the ps, phase %s, want Starting", st.Phase)
	}
	ready("default/job-ps-0")
	e.Step(sim.Epoch.Add(2))
	if st, _ := e.Group(key); st.Phase != lifecycle.Running {
		t.Fatalf("with every member Ready, phase %s, want Running", st.Phase)
	}
}

// TestTaskShortfallIsRecorded: a group refused because a task's minimum has no room
// now (another pod holds 2 of the node's 4 CPUs; the ps asks for 3, the workers fit)
// says so in its wait record, and the record read back renders the same words.
func TestTaskShortfallIsRecorded(t *testing.T) {
	key := "Volcano/default/job"
	e := sim.NewEngine()
	e.SetNode(gt.Node("n-0").GPU(4).CPU("4").Obj())
	other := gt.Pod("other").Req(corev1.ResourceCPU, "2").Node("n-0").Obj()
	other.Status.Phase = corev1.PodRunning
	e.SetPod(other, "")
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Volcano, Namespace: "default", Name: "job",
		MinMember: 2, TaskMinimums: map[string]int{"ps": 1}})
	e.SetPod(taskPod("job-ps-0", "ps", func(b *gt.PodBuilder) *gt.PodBuilder { return b.Req(corev1.ResourceCPU, "3") }), key)
	for i := range 4 {
		e.SetPod(taskPod("job-worker-"+strconv.Itoa(i), "worker", func(b *gt.PodBuilder) *gt.PodBuilder {
			return b.GPU(1).Req(corev1.ResourceCPU, "1")
		}), key)
	}
	if out := e.Step(sim.Epoch); len(out.Binds()) != 0 {
		t.Fatalf("binds %v: the ps's 3 CPUs do not fit the 2 free", out.Binds())
	}
	st, _ := e.Group(key)
	rec := engine.WaitRecord(st)
	if rec == nil || rec.Placement == nil || rec.Placement.Task == nil {
		t.Fatalf("wait record %+v has no task", rec)
	}
	want := "task ps: 0 of its minimum 1 members can be placed with the others"
	if got := engine.ReasonOf(*rec).String(); !strings.Contains(got, want) {
		t.Fatalf("recorded reason %q does not say %q", got, want)
	}
}

// TestTaskMemberFailedToStart: a parameter server placed in the attempt fails before the
// group is Ready, with no controller to replace it. The three workers left make
// minMember 3, but the ps's minimum of 1 cannot be met: the attempt ends at once, naming
// the task, instead of holding the workers' GPUs until the start timeout.
func TestTaskMemberFailedToStart(t *testing.T) {
	key := "Volcano/default/job"
	for _, tc := range []struct {
		name     string
		minimums map[string]int
		want     lifecycle.Phase
	}{
		{"minMember alone", nil, lifecycle.Starting},
		{"with the task minimums", map[string]int{"ps": 1, "worker": 2}, lifecycle.Backoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, pods := psAndWorkers(key, tc.minimums)
			if out := e.Step(sim.Epoch); len(out.Binds()) != 4 {
				t.Fatalf("binds %v, want the 4 members", out.Binds())
			}
			for name, p := range pods {
				p = p.DeepCopy()
				p.Spec.NodeName = "n-0"
				p.Status.Phase = corev1.PodPending
				if name == "default/job-ps-0" {
					p.Status.Phase = corev1.PodFailed
				}
				e.SetPod(p, key)
			}
			e.Step(sim.Epoch.Add(1))
			st, _ := e.Group(key)
			if st.Phase != tc.want {
				t.Fatalf("with the ps Failed and the workers starting, phase %s (%s), want %s", st.Phase, st.Message, tc.want)
			}
			if tc.minimums == nil {
				return
			}
			want := "task ps: 0 of its minimum 1 members placed in the attempt are left"
			if st.Reason != lifecycle.ReasonMemberFailedToStart || !strings.Contains(st.Message, want) {
				t.Fatalf("reason %s: %q, want %s saying %q", st.Reason, st.Message, lifecycle.ReasonMemberFailedToStart, want)
			}
		})
	}
}
