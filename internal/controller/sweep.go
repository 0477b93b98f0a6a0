package controller

import (
	"time"
)

// sweep reads every group's status once per summaryPeriod, spread over the loop's
// passes in that period rather than all in one: each pass reads the groups whose turn
// came since the pass before, in key order. Reading 10,500 groups at once held the loop
// for a quarter of a second each second in a deep-queue bench, and a release that came
// meanwhile waited for it before its admission was decided; spread, each pass of a busy
// loop reads a share in proportion to the time since the last. An idle loop that wakes
// once per period reads the whole round, as before.
type sweep struct {
	// keys are the groups of the round that began at began, keys[:next] of them read.
	keys  []string
	next  int
	began time.Time
}

// take returns the groups whose turn came by now: every group on the first pass; then
// the share of the current round due by now, and all the rest of it once its period is
// over, when the next round begins with the groups groups lists then.
func (s *sweep) take(now time.Time, groups func() []string) []string {
	if s.began.IsZero() {
		s.began = now
		return groups()
	}
	var out []string
	due := len(s.keys)
	if el := now.Sub(s.began); el < summaryPeriod {
		due = (len(s.keys)*int(el) + int(summaryPeriod) - 1) / int(summaryPeriod)
	}
	if due > s.next {
		out = s.keys[s.next:due]
		s.next = due
	}
	if !now.Before(s.end()) {
		s.keys, s.next, s.began = groups(), 0, now
	}
	return out
}

// end is when the current round's last turn is due.
func (s *sweep) end() time.Time { return s.began.Add(summaryPeriod) }
