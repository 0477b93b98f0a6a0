package engine_test

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/scenario"
)

// podGroupAPI is how explain names the API of the simulated jobs' groups: the
// cluster's training operator makes scheduler-plugins PodGroups (sim.Job.GroupKey).
const podGroupAPI = "scheduling.x-k8s.io/v1alpha1 PodGroup"

// explain renders what `muster explain podgroup/JOB -n default` would print for the
// job's group now: explain's report over the lifecycle record the scheduler would write
// from the engine's status, the group's spec and member pods as the cluster holds them,
// and the group's Queue object when the scenario declared one. Like explain for a
// group whose record says why it waits, it shows the scheduler's diagnosis and runs no
// placement of its own.
func (s *world) explain(c *scenario.Call) (string, error) {
	name := c.String("job")
	if err := s.hasJob(name); err != nil {
		return "", err
	}
	j := s.sim.Job(name)
	st, ok := s.eng.Group(j.GroupKey())
	if !ok {
		return "", fmt.Errorf("the engine has no group %s", j.GroupKey())
	}
	rec := recordOf(st)
	f := explain.Facts{
		Kind: "podgroup", Name: name, Namespace: st.Spec.Namespace, SchedulerNames: []string{"muster"},
		GroupAPI: podGroupAPI, GroupServed: true, GroupFound: true,
		Spec: st.Spec, Members: s.sim.Pods(name), Lifecycle: &rec,
		Queue: s.queueObject(st.Queue), Now: s.clock.Now(),
	}
	var b strings.Builder
	if err := explain.Build(f).WriteText(&b); err != nil {
		return "", fmt.Errorf("rendering the explanation: %w", err)
	}
	return b.String(), nil
}

// recordOf is the lifecycle record the scheduler writes on the group object for st:
// the one place the scenarios turn an engine status into a record.
func recordOf(st engine.Status) musterv1alpha1.GroupLifecycle { return engine.RecordOf(st) }

// queueObject returns the Queue object of a queue the scenario declared, with the
// engine's usage as its status, or nil for the implicit default queue (no object).
func (s *world) queueObject(name string) *musterv1alpha1.Queue {
	if !s.queues[name] {
		return nil
	}
	for _, q := range s.eng.Queues() {
		if q.Name != name {
			continue
		}
		return &musterv1alpha1.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: q.Name},
			Spec:       musterv1alpha1.QueueSpec{Quota: q.Quota.List(), Priority: q.Priority, Cohort: q.Cohort},
			Status:     musterv1alpha1.QueueStatus{Used: q.Used.List()},
		}
	}
	return nil
}
