package engine

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	gt "github.com/muster-sched/muster/internal/gangtest"
)

// TestPodVersionsBySpecGeneration: a new version of a bound pod moves the snapshot's
// version (and so every cached placement verdict) when its spec changed, told by
// metadata.generation where the API server sets it, by the specs themselves where it
// does not; a status write alone moves nothing.
func TestPodVersionsBySpecGeneration(t *testing.T) {
	for _, c := range []struct {
		name       string
		generation int64
		newGen     int64
		change     bool
		wantMove   bool
	}{
		{"a status write, generation set", 1, 1, false, false},
		{"a resize, generation moved", 1, 2, true, true},
		{"a status write, no generation", 0, 0, false, false},
		{"a resize, no generation", 0, 0, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{DefaultQueue: "default"})
			e.SetNode(gt.Node("n-0").GPU(2).Obj())
			e.SetGroup(GroupSpec{Key: "Coscheduling/default/g", Source: Coscheduling, Namespace: "default", Name: "g", MinMember: 1})
			p := gt.Pod("g-0").GPU(1).Node("n-0").Obj()
			p.Generation = c.generation
			e.SetPod(p, "Coscheduling/default/g")
			before := e.snapVersion
			q := p.DeepCopy()
			q.Generation = c.newGen
			q.Status.Phase = corev1.PodRunning
			if c.change {
				q.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
			}
			e.SetPod(q, "Coscheduling/default/g")
			if moved := e.snapVersion != before; moved != c.wantMove {
				t.Errorf("snapshot version moved: %t, want %t", moved, c.wantMove)
			}
		})
	}
}
