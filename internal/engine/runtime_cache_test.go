package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/sim"
)

// TestRuntimeFollowsTheMembers checks that the run time a group's members declare is
// read again when a member is added, updated or removed: the engine keeps what it read
// between those changes.
func TestRuntimeFollowsTheMembers(t *testing.T) {
	e := sim.NewEngineWith(0)
	key := "Coscheduling/default/job"
	e.SetGroup(engine.GroupSpec{Key: key, Source: engine.Coscheduling, Namespace: "default", Name: "job", MinMember: 2})
	check := func(step string, want time.Duration, from string) {
		t.Helper()
		d, why := e.Runtime(key)
		if d != want || !strings.Contains(why, from) {
			t.Errorf("%s: Runtime = %v (%q), want %v (%q)", step, d, why, want, from)
		}
	}
	worker := gt.Pod("job-1").GPU(1).Obj()
	deadline := int64(5400)
	worker.Spec.ActiveDeadlineSeconds = &deadline
	e.SetPod(worker, key)
	check("a member with a deadline", 90*time.Minute, engine.RuntimeDeadline)

	annotated := gt.Pod("job-1").GPU(1).Obj()
	annotated.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "2h"}
	e.SetPod(annotated, key)
	check("the member updated with an annotation", 2*time.Hour, engine.RuntimeDeclared)

	bad := gt.Pod("job-0").GPU(1).Obj()
	bad.Annotations = map[string]string{engine.AnnotationExpectedRuntime: "soon"}
	e.SetPod(bad, key)
	check("a member with a malformed annotation added", 0, `"soon" is not a positive duration`)

	e.RemovePod(cluster.PodKey(bad))
	check("the malformed member removed", 2*time.Hour, engine.RuntimeDeclared)
}
