package scenario

import "time"

// Epoch is the default origin of a scenario clock: scenario output prints times as
// offsets from it. It equals sim.Epoch, the simulated cluster's start.
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Clock is a scenario's time: it starts at its epoch and moves only when a command
// moves it.
type Clock struct {
	epoch, now time.Time
}

// NewClock returns a clock at epoch.
func NewClock(epoch time.Time) *Clock { return &Clock{epoch: epoch, now: epoch} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.now }

// Epoch returns the clock's origin.
func (c *Clock) Epoch() time.Time { return c.epoch }

// Advance moves the clock by d (backwards for a negative d, to show how a consumer
// copes with a clock that jumps back) and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.now = t }

// Elapsed returns the time since the epoch.
func (c *Clock) Elapsed() time.Duration { return c.now.Sub(c.epoch) }

// At renders t as an offset from the epoch ("+5m0s"), or "none" for the zero time.
func (c *Clock) At(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	d := t.Sub(c.epoch)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}
