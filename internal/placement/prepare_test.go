package placement_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// outcome renders what Place decided: the plan's assignments, or the diagnosis.
func outcome(plan *placement.Plan, diag *placement.Diagnosis) string {
	if plan == nil {
		return "failed: " + diag.String()
	}
	return fmt.Sprintf("placed: %+v unplaced %v", plan.Assignments, plan.Unplaced)
}

// TestPreparedPlacesAlike places groups prepared and not, one after another on a
// snapshot that fills up, keeping each plan: a prepared group gets the same plan or the
// same diagnosis every time, and so does a prepared group given part of its members.
func TestPreparedPlacesAlike(t *testing.T) {
	launcher := gt.Pod("launcher").Req(corev1.ResourceCPU, "2").Obj()
	groups := []placement.Group{
		gt.Group("one").Members(4).GPU(2).Build(),
		gt.Group("two").Members(3).GPU(4).Min(2).Plus("launcher", launcher).Build(),
		gt.Group("racked").Members(6).GPU(1).Topology(placement.Topology{Required: "rack"}).Build(),
		gt.Group("big").Members(12).GPU(8).Build(),
	}
	nodes := gt.Nodes("n", 8, func(b *gt.NodeBuilder) *gt.NodeBuilder {
		return b.GPU(8).CPU("16").Label("rack", fmt.Sprint(len(b.Obj().Name)%2))
	})
	plain, prepared := cluster.New(nodes, nil), cluster.New(nodes, nil)
	for round := range 3 {
		for _, g := range groups {
			want := outcome(placement.Place(plain, g, placement.Options{}))
			got := outcome(placement.Place(prepared, placement.Prepare(g), placement.Options{}))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d, group %s: prepared placement differs (-plain +prepared):\n%s", round, g.Name, diff)
			}
			part, preparedPart := g, placement.Prepare(g)
			part.Members, preparedPart.Members = g.Members[:1], preparedPart.Members[:1]
			part.MinMember, preparedPart.MinMember = 1, 1
			want = outcome(placement.Place(plain, part, placement.Options{}))
			got = outcome(placement.Place(prepared, preparedPart, placement.Options{}))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d, part of group %s: prepared placement differs (-plain +prepared):\n%s", round, g.Name, diff)
			}
		}
	}
}

// TestScarceTotalsEveryShape checks the resource placement packs on: the extended
// resource asked most of over all the group's shapes, the first by name among equals,
// prepared or not.
func TestScarceTotalsEveryShape(t *testing.T) {
	const a, b corev1.ResourceName = "example.com/a", "example.com/b"
	tests := []struct {
		name  string
		group placement.Group
		want  corev1.ResourceName
	}{
		{"none", gt.Group("g").Members(2).With(func(p *gt.PodBuilder) *gt.PodBuilder { return p.Req(corev1.ResourceCPU, "1") }).Build(), corev1.ResourceCPU},
		{"tie goes to the first by name", gt.Group("g").Members(2).With(func(p *gt.PodBuilder) *gt.PodBuilder { return p.Req(b, "2").Req(a, "2") }).Build(), a},
		{"totalled over shapes", gt.Group("g").Members(2).With(func(p *gt.PodBuilder) *gt.PodBuilder { return p.Req(a, "3") }).
			Plus("x", gt.Pod("x").Req(b, "4").Obj()).Plus("y", gt.Pod("y").Req(b, "3").Obj()).Build(), b},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := placement.Scarce(tc.group); got != tc.want {
				t.Errorf("Scarce = %s, want %s", got, tc.want)
			}
			if got := placement.Scarce(placement.Prepare(tc.group)); got != tc.want {
				t.Errorf("Scarce of the prepared group = %s, want %s", got, tc.want)
			}
		})
	}
}
