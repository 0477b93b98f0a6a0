package engine

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestTimersPopInTimeOrder pushes and pops wake-ups in any interleaving: every pop
// returns the earliest wake-up pushed and not popped yet.
func TestTimersPopInTimeOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h timers
		var want []time.Time
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, push := range rapid.SliceOfN(rapid.Bool(), 1, 64).Draw(t, "ops") {
			if push || len(want) == 0 {
				at := base.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "at")) * time.Second)
				h.push(timer{at: at, key: string(rune('a' + i%26))})
				want = append(want, at)
				continue
			}
			slices.SortFunc(want, time.Time.Compare)
			if got := h.pop(); !got.at.Equal(want[0]) {
				t.Fatalf("pop %d: got %v, want the earliest, %v", i, got.at, want[0])
			}
			want = want[1:]
		}
		if h.Len() != len(want) {
			t.Fatalf("%d wake-ups left, want %d", h.Len(), len(want))
		}
	})
}
