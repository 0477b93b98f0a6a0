// Package timeshift is a clock for tests of muster as a process: real time plus an
// offset that only moves forward, advanced by a test over a loopback HTTP endpoint
// (`muster serve --test-clock-addr`, hidden). Timers due by the new time fire at
// once, and an advance returns when every timer's owner has taken its fire and armed
// it again, so that a test which advances muster past its start-timeout or backoff
// knows that muster's loop has passed at the new time.
//
// It exists so that the e2e and observe suites wait on conditions rather than on
// muster's timers; it is never on in production: the flag is hidden, the endpoint
// listens on a loopback address only, and muster logs a warning when it is on.
package timeshift

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Clock is real time plus an offset that Advance moves forward. It implements
// clock.WithTicker, the clock muster's controller takes (controller.Options.Clock).
// The zero value is not usable; use New.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
	timers map[*timer]struct{} // every timer and ticker not stopped for good
	// settled is closed, and replaced, whenever an owed timer settles.
	settled chan struct{}
}

var _ clock.WithTicker = (*Clock)(nil)

// New returns a clock at real time (offset zero).
func New() *Clock {
	return &Clock{timers: map[*timer]struct{}{}, settled: make(chan struct{})}
}

// Now returns real time plus the offset.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now()
}

// now is Now with c.mu held.
func (c *Clock) now() time.Time { return time.Now().Add(c.offset) }

// Offset returns how far the clock is ahead of real time.
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}

// Since returns the time elapsed since t on this clock.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// After returns the channel of a new timer of d. Nobody arms that timer again, so an
// advance waits for it only until its fire is taken.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	t := &timer{c: c, ch: make(chan time.Time), once: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arm(t, d)
	return t.ch
}

// Sleep waits until d has passed on this clock.
func (c *Clock) Sleep(d time.Duration) { <-c.After(d) }

// Tick returns the channel of a new ticker of d, or nil if d <= 0, as time.Tick does.
func (c *Clock) Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	return c.NewTicker(d).C()
}

// NewTimer returns a timer that fires once d has passed on this clock. Like a timer
// of the time package since Go 1.23, its channel holds no stale value: Stop and Reset
// withdraw a fire that was not received.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := &timer{c: c, ch: make(chan time.Time)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arm(t, d)
	return t
}

// NewTicker returns a ticker that ticks every d on this clock; an advance past
// several ticks gives one, as a slow receiver of a time.Ticker gets. It panics if
// d <= 0, as time.NewTicker does.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic(fmt.Sprintf("timeshift: NewTicker(%s): expected a positive period", d))
	}
	t := &timer{c: c, ch: make(chan time.Time, 1), period: d}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.arm(t, d)
	return ticker{t}
}

// settleHorizon is how far beyond the new time a running timer may be due and still
// be waited for by Advance. muster's loop arms its timer for at most its
// reconcilePeriod (a second by default); a timer due later is not waited for.
const settleHorizon = time.Minute

// Advance moves the clock forward by d (which must be positive) and fires the timers
// and tickers due by the new time. Then it waits until every timer that was being
// handled (a fire sent or received, the timer not armed again yet) or that is due
// within settleHorizon has fired after the advance, had that fire received, and been
// armed again or stopped: the owner of the timer has passed its loop at the new time
// (muster's loop arms its timer again at the end of every pass, even one that began
// before the advance and read the old time). Tickers are not waited for. It returns
// the new time, or an error if ctx ends first.
func (c *Clock) Advance(ctx context.Context, d time.Duration) (time.Time, error) {
	if d <= 0 {
		return time.Time{}, fmt.Errorf("advance by %s: expected a positive duration (the clock only moves forward)", d)
	}
	c.mu.Lock()
	c.offset += d
	now := c.now()
	for t := range c.timers {
		if t.state == firing && !c.retract(t) {
			c.fire(t) // again, with the new time: the owner takes it after the advance
		}
		far := t.state == armed && t.deadline.After(now.Add(settleHorizon))
		if t.period == 0 && t.state != idle && !far {
			t.owed, t.seen = true, false
		}
		if t.state == armed {
			c.schedule(t)
		}
	}
	c.mu.Unlock()
	return now, c.waitSettled(ctx)
}

// waitSettled waits until no timer is owed a fire after the last advance.
func (c *Clock) waitSettled(ctx context.Context) error {
	for {
		c.mu.Lock()
		owed, settled := c.owed(), c.settled
		c.mu.Unlock()
		if owed == 0 {
			return nil
		}
		select {
		case <-settled:
		case <-ctx.Done():
			return fmt.Errorf("advanced the clock, but %d timer(s) were not armed again after firing at the new time: %w", owed, ctx.Err())
		}
	}
}

// owed counts the timers that have not settled since the last advance; c.mu held.
func (c *Clock) owed() int {
	n := 0
	for t := range c.timers {
		if t.owed {
			n++
		}
	}
	return n
}

// state is where a timer is in its cycle.
type state int

const (
	// idle: stopped (or a timer whose fire was withdrawn); not running.
	idle state = iota
	// armed: waiting for its deadline.
	armed
	// firing: fired, the fire not yet taken.
	firing
	// busy: the fire was received; the timer is not armed again yet.
	busy
)

// timer is a timer or, with a period, a ticker of a Clock. Its fields are guarded by
// c.mu.
type timer struct {
	c        *Clock
	ch       chan time.Time
	period   time.Duration // 0 for a timer
	state    state
	deadline time.Time   // when armed
	wake     *time.Timer // real-time trigger of the deadline, when armed
	delivery *delivery   // the fire being handed over, when firing
	// owed: an advance happened while the timer ran; seen: a fire was received since.
	// The timer settles when it is armed again or stopped with both set.
	owed, seen bool
	// once: the timer of After, done once its fire is taken.
	once bool
}

// arm arms t to fire after d; c.mu held.
func (c *Clock) arm(t *timer, d time.Duration) {
	c.timers[t] = struct{}{}
	t.state, t.deadline = armed, c.now().Add(d)
	c.schedule(t)
}

// schedule fires t if it is due, or sets its real-time trigger for its deadline;
// c.mu held.
func (c *Clock) schedule(t *timer) {
	if t.wake != nil {
		t.wake.Stop()
		t.wake = nil
	}
	left := t.deadline.Sub(c.now())
	if left <= 0 {
		c.fire(t)
		return
	}
	deadline := t.deadline
	t.wake = time.AfterFunc(left, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.state == armed && t.deadline.Equal(deadline) {
			c.schedule(t) // fires it, or waits again if it is not due after all
		}
	})
}

// delivery is one fire of a timer being handed to its owner.
type delivery struct {
	withdraw chan struct{} // closed to withdraw the fire
	done     chan struct{} // closed once the fire was taken or withdrawn
	taken    bool          // set before done is closed
}

// fire delivers t's fire: a ticker's without blocking (a tick not taken is dropped),
// a timer's from a goroutine until taken or withdrawn; c.mu held.
func (c *Clock) fire(t *timer) {
	now := c.now()
	if t.period > 0 {
		select {
		case t.ch <- now:
		default:
		}
		t.deadline = now.Add(t.period)
		c.schedule(t)
		return
	}
	t.state = firing
	d := &delivery{withdraw: make(chan struct{}), done: make(chan struct{})}
	t.delivery = d
	go func() {
		select {
		case t.ch <- now:
			d.taken = true
		case <-d.withdraw:
		}
		close(d.done)
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.delivery == d {
			c.taken(t)
		}
	}()
}

// taken records that t's fire was received; c.mu held.
func (c *Clock) taken(t *timer) {
	t.delivery, t.state = nil, busy
	if t.owed {
		t.seen = true
	}
	if t.once {
		c.disarm(t) // settles it
		delete(c.timers, t)
	}
}

// retract withdraws t's fire being handed over and reports whether the owner had
// taken it already (t is busy then); c.mu held. The owner may have taken it a moment
// ago, before the delivering goroutine recorded it: retract waits for that goroutine's
// verdict, which does not need c.mu.
func (c *Clock) retract(t *timer) bool {
	d := t.delivery
	close(d.withdraw)
	<-d.done
	t.delivery = nil
	if d.taken {
		c.taken(t)
	}
	return d.taken
}

// disarm stops t's trigger and withdraws a fire not taken, reports whether t was
// waiting for its deadline, and settles t if it is owed and its fire was seen; c.mu
// held.
func (c *Clock) disarm(t *timer) bool {
	wasArmed := t.state == armed
	if t.wake != nil {
		t.wake.Stop()
		t.wake = nil
	}
	if t.delivery != nil {
		c.retract(t)
	}
	t.state = idle
	if t.owed && t.seen {
		t.owed, t.seen = false, false
		close(c.settled)
		c.settled = make(chan struct{})
	}
	return wasArmed
}

// C returns the channel the timer fires on.
func (t *timer) C() <-chan time.Time { return t.ch }

// Stop stops the timer; it reports whether the timer was waiting for its deadline.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	wasArmed := t.c.disarm(t)
	if !t.owed {
		delete(t.c.timers, t)
	}
	return wasArmed
}

// Reset arms the timer again to fire after d; it reports whether the timer was
// waiting for its deadline.
func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	wasArmed := t.c.disarm(t)
	t.c.arm(t, d)
	return wasArmed
}

// ticker is a timer with a period, seen as a clock.Ticker.
type ticker struct{ t *timer }

// C returns the channel the ticker ticks on.
func (k ticker) C() <-chan time.Time { return k.t.ch }

// Stop stops the ticker.
func (k ticker) Stop() {
	k.t.c.mu.Lock()
	defer k.t.c.mu.Unlock()
	k.t.c.disarm(k.t)
	delete(k.t.c.timers, k.t)
}
