package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/sim"
)

// TestSweepSpreadsARoundOverItsPeriod: the first pass reads every group; then the passes
// of a round read the groups whose turn came since the last pass, each once, in order,
// and a pass after the period reads what is left and begins the next round with the
// groups there are then.
func TestSweepSpreadsARoundOverItsPeriod(t *testing.T) {
	var groups []string
	for i := range 10 {
		groups = append(groups, fmt.Sprintf("g%d", i))
	}
	list := func() []string { return slices.Clone(groups) }
	var s sweep
	t0 := sim.Epoch
	steps := []struct {
		at   time.Duration
		want []string
	}{
		{0, groups}, // the first pass reads every group
		{500 * time.Millisecond, nil},
		{time.Second, nil}, // the first round begins
		{1250 * time.Millisecond, groups[:3]},
		{1260 * time.Millisecond, nil},
		{1500 * time.Millisecond, groups[3:5]},
		{1999 * time.Millisecond, groups[5:]},
		{2 * time.Second, nil}, // the second round begins
		{2100 * time.Millisecond, groups[:1]},
		{5 * time.Second, groups[1:]}, // woke late: the rest at once, and a third round
		{5500 * time.Millisecond, groups[:5]},
	}
	for _, st := range steps {
		got := s.take(t0.Add(st.at), list)
		if !slices.Equal(got, st.want) {
			t.Errorf("at %v: read %v, want %v", st.at, got, st.want)
		}
	}
	if want := t0.Add(6 * time.Second); !s.end().Equal(want) {
		t.Errorf("the third round ends at %v, want %v", s.end(), want)
	}
	// A group added mid-round waits for the next round; one gone is read and skipped
	// by the reporter (Engine.Group says it is unknown).
	groups = append(groups, "g99")
	if got := s.take(t0.Add(6*time.Second), list); !slices.Equal(got, groups[5:10]) {
		t.Errorf("at the third round's end: read %v, want %v", got, groups[5:10])
	}
	if got := s.take(t0.Add(7*time.Second), list); !slices.Equal(got, groups) {
		t.Errorf("the fourth round: read %v, want every group of its start %v", got, groups)
	}
}
