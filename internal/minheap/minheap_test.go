package minheap

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// at is a value ordered by its time; id tells values of one time apart.
type at struct{ t, id int }

func (a at) Before(b at) bool { return a.t < b.t }

// TestPopReturnsTheLeast pushes and pops in any interleaving: every pop returns a value
// of the least time pushed and not popped yet, and every value pushed comes out once.
func TestPopReturnsTheLeast(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h Heap[at]
		var in []at
		var out []int
		pushed := 0
		for i, push := range rapid.SliceOfN(rapid.Bool(), 1, 64).Draw(t, "ops") {
			if push || len(in) == 0 {
				v := at{rapid.IntRange(0, 20).Draw(t, "t"), i}
				h.Push(v)
				in = append(in, v)
				pushed++
				continue
			}
			least := slices.MinFunc(in, func(a, b at) int { return a.t - b.t })
			got := h.Pop()
			if got.t != least.t {
				t.Fatalf("pop %d: got time %d, want the least, %d", i, got.t, least.t)
			}
			in = slices.DeleteFunc(in, func(v at) bool { return v == got })
			out = append(out, got.id)
		}
		if len(h) != len(in) {
			t.Fatalf("%d values left, want %d", len(h), len(in))
		}
		for len(h) > 0 {
			out = append(out, h.Pop().id)
		}
		slices.Sort(out)
		if len(slices.Compact(slices.Clone(out))) != len(out) || len(out) != pushed {
			t.Fatalf("%d values pushed, these came out: %v", pushed, out)
		}
	})
}
