package placement

import (
	"fmt"
	"reflect"
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
	for _, m := range g.Members {
		k := keyOf(m.Pod, m.requests(), true)
		if counts[k] == 0 {
			keys = append(keys, k)
		}
		counts[k]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "min=%d;required=%s;domain=%s;preferred=%s", g.MinMember,
		g.Topology.Required, g.Topology.Domain, g.Topology.Preferred)
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
	shapes := shapesOf(g.Members)
	orderShapes(shapes, scarceResource(shapes))
	out.Shapes = make([]ShapeDiagnosis, len(d.Shapes))
	copy(out.Shapes, d.Shapes)
	for i := range out.Shapes {
		if i < len(shapes) {
			out.Shapes[i].Shape = shapes[i].name()
		}
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

// Same reports whether d and o, computed for groups of one Signature, say the same: what
// For renders of each for one group is equal. It compares them without rendering.
func (d *Diagnosis) Same(o *Diagnosis) bool {
	a, b := d.anonymous(), o.anonymous()
	return reflect.DeepEqual(&a, &b)
}

// anonymous is d without what For replaces: the group's name and size, and the shapes'
// names, the blocked shape named by its place among them instead.
func (d *Diagnosis) anonymous() Diagnosis {
	out := *d
	out.Group, out.Members = "", 0
	out.Shapes = make([]ShapeDiagnosis, len(d.Shapes))
	copy(out.Shapes, d.Shapes)
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

// Scarce returns the resource Place packs g's members on: the extended resource they ask
// most of in total (nvidia.com/gpu, typically), or cpu when they ask for none.
func Scarce(g Group) corev1.ResourceName { return scarceResource(shapesOf(g.Members)) }
