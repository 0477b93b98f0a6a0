package placement_test

import (
	"flag"
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// oracleCase is a small random cluster and group.
type oracleCase struct {
	nodes []*corev1.Node
	bound []*corev1.Pod
	group placement.Group
	mixed bool
}

func drawCase(t *rapid.T) oracleCase {
	var c oracleCase
	nodeCount := rapid.IntRange(1, 4).Draw(t, "nodes")
	for i := 0; i < nodeCount; i++ {
		b := gt.Node(fmt.Sprintf("n-%d", i)).GPU(int64(rapid.IntRange(0, 4).Draw(t, "gpu"))).
			CPU(fmt.Sprint(rapid.IntRange(1, 4).Draw(t, "cpu")))
		if rapid.Bool().Draw(t, "labelled") {
			b.Label("pool", "a")
		}
		if rapid.IntRange(0, 9).Draw(t, "taint") == 0 {
			b.Taint("dedicated", "x", corev1.TaintEffectNoSchedule)
		}
		c.nodes = append(c.nodes, b.Obj())
		if used := rapid.IntRange(0, 2).Draw(t, "used"); used > 0 {
			c.bound = append(c.bound, gt.Pod(fmt.Sprintf("x-%d", i)).GPU(int64(used)).Node(b.Obj().Name).Obj())
		}
	}
	shapes := rapid.IntRange(1, 2).Draw(t, "shapes")
	c.mixed = shapes > 1
	for s := 0; s < shapes; s++ {
		gpu := int64(rapid.IntRange(0, 3).Draw(t, "member-gpu"))
		cpu := rapid.IntRange(0, 3).Draw(t, "member-cpu")
		selector := rapid.IntRange(0, 3).Draw(t, "selector") == 0
		count := rapid.IntRange(1, 3).Draw(t, "count")
		for m := 0; m < count; m++ {
			name := fmt.Sprintf("s%d-m%d", s, m)
			p := gt.Pod(name)
			if gpu > 0 {
				p.GPU(gpu)
			}
			if cpu > 0 {
				p.Req(corev1.ResourceCPU, fmt.Sprint(cpu))
			}
			if selector {
				p.Selector("pool", "a")
			}
			c.group.Members = append(c.group.Members, placement.Member{Name: name, Pod: p.Obj()})
		}
	}
	c.group.Name = "g"
	c.group.MinMember = rapid.IntRange(1, len(c.group.Members)).Draw(t, "min")
	return c
}

// oracle tries every assignment of members to nodes (or to none) and reports the most
// members any valid assignment places.
func oracle(c oracleCase) int {
	snap := cluster.New(c.nodes, c.bound)
	nodes := snap.Nodes()
	best := 0
	var try func(i, placed int)
	try = func(i, placed int) {
		if i == len(c.group.Members) {
			best = max(best, placed)
			return
		}
		if placed+len(c.group.Members)-i <= best {
			return
		}
		m := c.group.Members[i]
		req := cluster.PodRequests(m.Pod)
		for _, n := range nodes {
			if !eligible(n, m.Pod) || n.Fits(req) == 0 {
				continue
			}
			undo := snap.Assume(n, req)
			try(i+1, placed+1)
			undo()
		}
		try(i+1, placed)
	}
	try(0, 0)
	return best
}

// eligible is the oracle's own statement of the static predicates used in drawCase.
func eligible(n *cluster.NodeInfo, p *corev1.Pod) bool {
	for k, v := range p.Spec.NodeSelector {
		if n.Node.Labels[k] != v {
			return false
		}
	}
	return len(n.Node.Spec.Taints) == 0
}

// TestAgainstOracle checks placement against brute force on random small clusters: every
// plan is valid (predicates, capacity, at least minMember), and a plan always exists when
// all members share one shape and the oracle finds one. Placement is greedy, so with
// mixed shapes it may miss a plan the oracle finds; that rate is checked, on fixed cases,
// by TestMixedShapesAgainstOracle.
func TestAgainstOracle(t *testing.T) {
	// More cases than rapid's default 100: the cases are small and cheap.
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		if err := f.Value.Set("2000"); err != nil {
			t.Fatal(err)
		}
		defer f.Value.Set(f.DefValue) //nolint:errcheck // restoring the default cannot fail
	}
	rapid.Check(t, func(t *rapid.T) {
		c := drawCase(t)
		snap := cluster.New(c.nodes, c.bound)
		plan, diag := placement.Place(snap, c.group, placement.Options{})
		if plan != nil {
			checkPlan(t, c, plan)
		}
		if !c.mixed && plan == nil && oracle(c) >= c.group.MinMember {
			t.Fatalf("oracle places %d members (min %d) but Place failed: %v", oracle(c), c.group.MinMember, diag)
		}
		// Try is Place without the diagnosis, and a member's Key only spares rendering
		// it: the same plan, or none.
		if plan != nil {
			plan.Revert()
		}
		keyed := c.group
		keyed.Members = slices.Clone(keyed.Members)
		for i := range keyed.Members {
			keyed.Members[i].Key = placement.ShapeKey(keyed.Members[i])
		}
		tried := placement.Try(snap, keyed, placement.Options{})
		if (tried == nil) != (plan == nil) || tried != nil && !reflect.DeepEqual(tried.Assignments, plan.Assignments) {
			t.Fatalf("Try gave %+v where Place gave %+v", tried, plan)
		}
	})
}

// TestMixedShapesAgainstOracle measures how often placement finds a plan for a group of
// mixed shapes exactly when the oracle does, on the same 4,000 cases every run (rapid's
// Example with seeds 0..3999), and requires at least 99%. The cases are fixed because a
// rate over random cases moves from run to run (98.9–99.7% over 2,000 random cases) and a
// threshold on it would fail by chance.
func TestMixedShapesAgainstOracle(t *testing.T) {
	cases := rapid.Custom(drawCase)
	var mixed, match int
	for seed := range 4000 {
		c := cases.Example(seed)
		if !c.mixed {
			continue
		}
		mixed++
		plan, _ := placement.Place(cluster.New(c.nodes, c.bound), c.group, placement.Options{})
		if (plan != nil) == (oracle(c) >= c.group.MinMember) {
			match++
		}
	}
	rate := float64(match) / float64(mixed)
	t.Logf("mixed shapes: placement agreed with the oracle on %d of %d cases (%.2f%%)", match, mixed, 100*rate)
	if rate < 0.99 {
		t.Errorf("mixed-shape match rate %.2f%% is below 99%%", 100*rate)
	}
}

// checkPlan re-validates a plan from scratch: no predicate or capacity is violated.
func checkPlan(t *rapid.T, c oracleCase, plan *placement.Plan) {
	if len(plan.Assignments) < c.group.MinMember {
		t.Fatalf("plan places %d members, fewer than minMember %d", len(plan.Assignments), c.group.MinMember)
	}
	fresh := cluster.New(c.nodes, c.bound)
	pods := map[string]*corev1.Pod{}
	for _, m := range c.group.Members {
		pods[m.Name] = m.Pod
	}
	for _, a := range plan.Assignments {
		n := fresh.Node(a.Node)
		p := pods[a.Member]
		if !eligible(n, p) {
			t.Fatalf("member %s placed on ineligible node %s", a.Member, a.Node)
		}
		req := cluster.PodRequests(p)
		if n.Fits(req) == 0 {
			t.Fatalf("member %s does not fit node %s: free %v", a.Member, a.Node, n.Requested)
		}
		fresh.Assume(n, req)
	}
}

// sameByReflection is Diagnosis.Same as it was first written: the diagnoses without what
// For replaces, compared by reflect.DeepEqual. Same compares field by field instead.
func sameByReflection(d, o *placement.Diagnosis) bool {
	anonymous := func(d *placement.Diagnosis) placement.Diagnosis {
		out := *d
		out.Group, out.Members = "", 0
		out.Shapes = slices.Clone(d.Shapes)
		for i := range out.Shapes {
			out.Shapes[i].Shape = ""
		}
		if b := d.Blocked; b != nil {
			cp := *b
			for i := range d.Shapes {
				if d.Shapes[i].Shape == b.Shape.Shape {
					cp.Shape.Shape = fmt.Sprintf("#%d", i)
				}
			}
			out.Blocked = &cp
		}
		return out
	}
	a, b := anonymous(d), anonymous(o)
	return reflect.DeepEqual(&a, &b)
}

// TestSameAgainstReflection: Same agrees with sameByReflection on the diagnoses of random
// cases, those of one case placed twice under two names (the same) included.
func TestSameAgainstReflection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, o := drawCase(t), drawCase(t)
		_, d := placement.Place(cluster.New(c.nodes, c.bound), c.group, placement.Options{})
		renamed := c.group
		renamed.Name = "renamed"
		_, r := placement.Place(cluster.New(c.nodes, c.bound), renamed, placement.Options{})
		_, od := placement.Place(cluster.New(o.nodes, o.bound), o.group, placement.Options{})
		if d == nil || od == nil {
			return
		}
		for _, pair := range [][2]*placement.Diagnosis{{d, r}, {d, od}, {od, d}, {d, d}} {
			if got, want := pair[0].Same(pair[1]), sameByReflection(pair[0], pair[1]); got != want {
				t.Fatalf("Same(%v, %v) = %t, reflection says %t", pair[0], pair[1], got, want)
			}
		}
	})
}

// TestSameComparesEveryField fails when a diagnosis type gains a field: Same compares them
// by name, and must learn of it.
func TestSameComparesEveryField(t *testing.T) {
	for typ, want := range map[reflect.Type]int{
		reflect.TypeFor[placement.Diagnosis]():      10,
		reflect.TypeFor[placement.ShapeDiagnosis](): 8,
		reflect.TypeFor[placement.Blocked]():        2,
	} {
		if typ.NumField() != want {
			t.Errorf("%s has %d fields, Same compares %d: compare the new ones", typ, typ.NumField(), want)
		}
	}
}

// TestSameSeesEachField: a diagnosis differs from another, Same says, when any field For
// keeps differs, and not when only what For replaces does.
func TestSameSeesEachField(t *testing.T) {
	base := func() *placement.Diagnosis {
		shape := func() placement.ShapeDiagnosis {
			return placement.ShapeDiagnosis{Shape: "g-0 ×2", Members: 2, Requests: cluster.Resources{"cpu": 1000}, Nodes: 4,
				Available: 1, Room: 1, Reasons: []placement.ReasonCount{{NodeReason: placement.NodeReason{Kind: placement.TooManyPods}, Nodes: 3}},
				Shortfall: &placement.Shortfall{Resource: "cpu", Need: 1000, Largest: 500, Eligible: 4}}
		}
		return &placement.Diagnosis{Code: placement.Unschedulable, Group: "g", MinMember: 2, Members: 2, Placed: 1,
			Shapes: []placement.ShapeDiagnosis{shape()}, EmptyRoom: 1, Topology: "t", Blocked: &placement.Blocked{Placed: 1, Shape: shape()},
			Task: &placement.TaskShortfall{Task: "ps", Minimum: 1, Members: 1}}
	}
	for name, tc := range map[string]struct {
		change func(d *placement.Diagnosis)
		same   bool
	}{
		"group":         {func(d *placement.Diagnosis) { d.Group, d.Members = "h", 3 }, true},
		"shape names":   {func(d *placement.Diagnosis) { d.Shapes[0].Shape, d.Blocked.Shape.Shape = "h-0 ×2", "h-0 ×2" }, true},
		"code":          {func(d *placement.Diagnosis) { d.Code = placement.Impossible }, false},
		"minMember":     {func(d *placement.Diagnosis) { d.MinMember++ }, false},
		"placed":        {func(d *placement.Diagnosis) { d.Placed++ }, false},
		"emptyRoom":     {func(d *placement.Diagnosis) { d.EmptyRoom++ }, false},
		"topology":      {func(d *placement.Diagnosis) { d.Topology = "u" }, false},
		"shapes":        {func(d *placement.Diagnosis) { d.Shapes = append(d.Shapes, d.Shapes[0]) }, false},
		"members":       {func(d *placement.Diagnosis) { d.Shapes[0].Members++ }, false},
		"requests":      {func(d *placement.Diagnosis) { d.Shapes[0].Requests["cpu"]++ }, false},
		"nodes":         {func(d *placement.Diagnosis) { d.Shapes[0].Nodes++ }, false},
		"available":     {func(d *placement.Diagnosis) { d.Shapes[0].Available++ }, false},
		"room":          {func(d *placement.Diagnosis) { d.Shapes[0].Room++ }, false},
		"reasons":       {func(d *placement.Diagnosis) { d.Shapes[0].Reasons[0].Nodes++ }, false},
		"shortfall":     {func(d *placement.Diagnosis) { d.Shapes[0].Shortfall.Largest++ }, false},
		"no shortfall":  {func(d *placement.Diagnosis) { d.Shapes[0].Shortfall = nil }, false},
		"not blocked":   {func(d *placement.Diagnosis) { d.Blocked = nil }, false},
		"blocked after": {func(d *placement.Diagnosis) { d.Blocked.Placed++ }, false},
		"blocked shape": {func(d *placement.Diagnosis) { d.Blocked.Shape.Shape = "other" }, false},
		"blocked room":  {func(d *placement.Diagnosis) { d.Blocked.Shape.Room++ }, false},
		"no task":       {func(d *placement.Diagnosis) { d.Task = nil }, false},
		"task placed":   {func(d *placement.Diagnosis) { d.Task.Placed++ }, false},
	} {
		d := base()
		tc.change(d)
		if got := base().Same(d); got != tc.same || sameByReflection(base(), d) != tc.same {
			t.Errorf("%s changed: Same = %t, want %t", name, got, tc.same)
		}
	}
}
