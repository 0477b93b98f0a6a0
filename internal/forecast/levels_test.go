package forecast

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// stepList is levels the plain way: what is free now and the changes, in the order
// they were made.
type stepList struct {
	free  []int64
	steps []struct {
		at    int64
		delta []int64
	}
}

func (s *stepList) change(at int64, delta []int64, sign int64) {
	v := make([]int64, len(delta))
	addTo(v, delta, sign)
	s.steps = append(s.steps, struct {
		at    int64
		delta []int64
	}{at, v})
}

// at is the vector in force at instant x.
func (s *stepList) at(x int64) []int64 {
	v := slices.Clone(s.free)
	for _, st := range s.steps {
		if st.at <= x {
			addTo(v, st.delta, 1)
		}
	}
	return v
}

// minIn is the least of each dimension at t and at every change in (t, end).
func (s *stepList) minIn(t, end int64) []int64 {
	out := s.at(t)
	for _, st := range s.steps {
		if st.at > t && st.at < end {
			for i, v := range s.at(st.at) {
				out[i] = min(out[i], v)
			}
		}
	}
	return out
}

// TestLevels applies random additions and takes to levels and to a plain list of
// changes, and checks that what is free throughout random windows agrees, and that the
// instants stay sorted and distinct, one level each.
func TestLevels(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := rapid.IntRange(1, 3).Draw(rt, "d")
		vec := func(label string) []int64 {
			return rapid.SliceOfN(rapid.Int64Range(0, 9), d, d).Draw(rt, label)
		}
		free := vec("free")
		l := levels{d: d, at: []int64{0}, vals: slices.Clone(free)}
		ref := stepList{free: slices.Clone(free)}
		for i := range rapid.IntRange(0, 12).Draw(rt, "ops") {
			t0 := rapid.Int64Range(0, 10).Draw(rt, fmt.Sprint("t", i))
			r := vec(fmt.Sprint("r", i))
			switch rapid.IntRange(0, 2).Draw(rt, fmt.Sprint("op", i)) {
			case 0:
				l.add(t0, r)
				ref.change(t0, r, 1)
			case 1:
				l.take(t0, never, r)
				ref.change(t0, r, -1)
			default:
				end := t0 + rapid.Int64Range(1, 5).Draw(rt, fmt.Sprint("len", i))
				l.take(t0, end, r)
				ref.change(t0, r, -1)
				ref.change(end, r, 1)
			}
		}
		if l.at[0] != 0 || len(l.vals) != len(l.at)*d {
			rt.Fatalf("instants %v, %d values of %d", l.at, len(l.vals), d)
		}
		for k := 1; k < len(l.at); k++ {
			if l.at[k] <= l.at[k-1] {
				rt.Fatalf("instants not sorted and distinct: %v", l.at)
			}
		}
		for t0 := int64(0); t0 <= 16; t0++ {
			for _, end := range []int64{t0 + 1, t0 + 3, never} {
				got := make([]int64, d)
				l.minIn(t0, end, got)
				if want := ref.minIn(t0, end); !slices.Equal(got, want) {
					rt.Fatalf("free throughout [%d, %d): got %v, want %v", t0, end, got, want)
				}
			}
		}
	})
}
