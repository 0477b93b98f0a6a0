package placement

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Signature renders everything about a group that Place reads apart from names: each
// member shape with its count, in order of first appearance, MinMember and the topology.
// Groups with one signature get the same outcome from Place on the same snapshot with the
// same options, so a caller that saw one fail need not place the others.
func Signature(g Group) string {
	var keys []string
	counts := map[string]int{}
	core, _ := coreOf(g.Members, g.TaskMinimums)
	for i, m := range g.Members {
		k := keyOf(m.Pod, m.requests(), true)
		if core != nil && core[i] {
			k = "core:" + k
		}
		if counts[k] == 0 {
			keys = append(keys, k)
		}
		counts[k]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "min=%d;required=%s;domain=%s;preferred=%s", g.MinMember,
		g.Topology.Required, g.Topology.Domain, g.Topology.Preferred)
	for _, task := range slices.Sorted(maps.Keys(g.TaskMinimums)) {
		fmt.Fprintf(&b, ";task %q>=%d", task, g.TaskMinimums[task])
	}
	for _, k := range keys {
		fmt.Fprintf(&b, ";%d*%s", counts[k], k)
	}
	return b.String()
}

// For returns a copy of d that describes g, a group with the same Signature as the group d
// was computed for: the group and shape names are g's, everything else is d's.
func (d *Diagnosis) For(g Group) *Diagnosis {
	out := *d
	out.Group = g.Name
	out.Members = len(g.Members)
	out.Shapes = make([]ShapeDiagnosis, len(d.Shapes))
	copy(out.Shapes, d.Shapes)
	for i, name := range shapeNames(g, len(d.Shapes)) {
		out.Shapes[i].Shape = name
	}
	if b := d.Blocked; b != nil {
		cp := *b
		for i := range d.Shapes {
			if d.Shapes[i].Shape == b.Shape.Shape {
				cp.Shape.Shape = out.Shapes[i].Shape
			}
		}
		out.Blocked = &cp
	}
	return &out
}

// shapeNames names g's shapes in the order Place takes them, for a diagnosis of n shapes
// of a group with g's Signature. With one shape, the common gang of identical workers,
// every member is of it: its name needs no shape key rendered.
func shapeNames(g Group, n int) []string {
	if n == 1 && len(g.Members) > 0 {
		return []string{(&form{members: g.Members}).name()}
	}
	forms := shapeSetOf(g).forms
	names := make([]string, min(n, len(forms)))
	for i := range names {
		names[i] = forms[i].name()
	}
	return names
}

// Same reports whether d and o, computed for groups of one Signature, say the same: what
// For renders of each for one group is equal. It compares them without rendering, field
// by field: a queue compares the diagnoses of every class on each pass, and copying them
// for reflect.DeepEqual showed in a replay's profile. TestSameComparesEveryField fails
// when a diagnosis gains a field.
func (d *Diagnosis) Same(o *Diagnosis) bool {
	if d == o {
		return true
	}
	if d.Code != o.Code || d.MinMember != o.MinMember || d.Placed != o.Placed || d.EmptyRoom != o.EmptyRoom ||
		d.Topology != o.Topology || len(d.Shapes) != len(o.Shapes) || (d.Shapes == nil) != (o.Shapes == nil) ||
		(d.Task == nil) != (o.Task == nil) || (d.Task != nil && *d.Task != *o.Task) {
		return false
	}
	for i := range d.Shapes {
		if !sameShape(d.Shapes[i], o.Shapes[i]) {
			return false
		}
	}
	db, ob := d.Blocked, o.Blocked
	if db == nil || ob == nil {
		return db == ob
	}
	return db.Placed == ob.Placed && d.blockedName() == o.blockedName() && sameShape(db.Shape, ob.Shape)
}

// sameShape compares two shapes' diagnoses but for their names, which For replaces.
func sameShape(a, b ShapeDiagnosis) bool {
	if a.Members != b.Members || a.Nodes != b.Nodes || a.Available != b.Available || a.Room != b.Room ||
		(a.Requests == nil) != (b.Requests == nil) || !maps.Equal(a.Requests, b.Requests) ||
		(a.Reasons == nil) != (b.Reasons == nil) || !slices.Equal(a.Reasons, b.Reasons) {
		return false
	}
	if a.Shortfall == nil || b.Shortfall == nil {
		return a.Shortfall == b.Shortfall
	}
	return *a.Shortfall == *b.Shortfall
}

// blockedName names the blocked shape as For leaves it: by its place among the shapes
// (For renames it with them), or by its own name when it is none of them.
func (d *Diagnosis) blockedName() string {
	name := d.Blocked.Shape.Shape
	for i := range d.Shapes {
		if d.Shapes[i].Shape == d.Blocked.Shape.Shape {
			name = fmt.Sprintf("#%d", i)
		}
	}
	return name
}

// Scarce returns the resource Place packs g's members on: the extended resource they ask
// most of in total (nvidia.com/gpu, typically), or cpu when they ask for none.
func Scarce(g Group) corev1.ResourceName { return shapeSetOf(g).scarce }
