package timeshift

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// wait bounds the waits of these tests; none of them waits on real time passing.
const wait = 30 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// owner takes each fire of timer, sends it on fired, and then stops the timer, as
// muster's loop takes its timer's fire, passes, and arms it again.
func owner(tm interface {
	C() <-chan time.Time
	Stop() bool
}, fired chan<- time.Time) {
	at := <-tm.C()
	fired <- at
	tm.Stop()
}

func TestAdvanceFiresDueTimersOnly(t *testing.T) {
	ctx := testContext(t)
	c := New()
	start := c.Now()
	hour, threeHours := c.NewTimer(time.Hour), c.NewTimer(3*time.Hour)
	fired := make(chan time.Time, 1)
	go owner(hour, fired)

	now, err := c.Advance(ctx, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := now.Sub(start); got < 2*time.Hour {
		t.Errorf("Advance(2h) returned %s after the start; expected at least 2h", got)
	}
	if got := c.Now().Sub(start); got < 2*time.Hour {
		t.Errorf("Now after Advance(2h): %s after the start; expected at least 2h", got)
	}
	if got := c.Offset(); got != 2*time.Hour {
		t.Errorf("Offset after Advance(2h): %s; expected 2h", got)
	}
	select {
	case at := <-fired:
		if at.Sub(start) < 2*time.Hour {
			t.Errorf("the 1h timer fired with %s after the start; expected the new time, at least 2h", at.Sub(start))
		}
	default:
		t.Fatal("Advance(2h) returned before the 1h timer fired and its owner stopped it")
	}
	select {
	case at := <-threeHours.C():
		t.Fatalf("the 3h timer fired at %s after an advance of 2h", at.Sub(start))
	default:
	}

	go owner(threeHours, fired)
	if _, err := c.Advance(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	default:
		t.Fatal("Advance(1h more) returned before the 3h timer fired and its owner stopped it")
	}
}

// TestAdvanceWaitsForTheOwner: an advance returns only once the owner of the timer it
// fired has taken the fire and armed the timer again.
func TestAdvanceWaitsForTheOwner(t *testing.T) {
	ctx := testContext(t)
	c := New()
	tm := c.NewTimer(time.Hour)
	advanced := make(chan error, 1)
	go func() {
		_, err := c.Advance(ctx, time.Hour)
		advanced <- err
	}()
	<-tm.C() // the fire; the owner has not armed the timer again
	select {
	case err := <-advanced:
		t.Fatalf("Advance returned (%v) while the timer's owner was still handling its fire", err)
	default:
	}
	tm.Reset(time.Hour)
	if err := <-advanced; err != nil {
		t.Fatal(err)
	}
	tm.Stop()
}

// TestAdvanceWaitsForAPassBegunBefore: a timer whose owner was handling a fire taken
// before the advance (its pass read the old time) is waited for until it fires again
// after the advance and is armed again.
func TestAdvanceWaitsForAPassBegunBefore(t *testing.T) {
	ctx := testContext(t)
	c := New()
	tm := c.NewTimer(0)
	<-tm.C() // the owner is in a pass, at the old time
	advanced := make(chan error, 1)
	go func() {
		_, err := c.Advance(ctx, time.Hour)
		advanced <- err
	}()
	waitOwed(t, c, 1)
	tm.Reset(0) // the pass that began before the advance ends (its wake-up passed): not enough
	<-tm.C()    // the pass at the new time
	select {
	case err := <-advanced:
		t.Fatalf("Advance returned (%v) before the pass after it ended", err)
	default:
	}
	tm.Reset(time.Hour)
	if err := <-advanced; err != nil {
		t.Fatal(err)
	}
	tm.Stop()
}

// waitOwed waits until n timers are owed a fire (an Advance running in another
// goroutine has marked them).
func waitOwed(t *testing.T, c *Clock, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		c.mu.Lock()
		owed := c.owed()
		c.mu.Unlock()
		if owed == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("expected %d timer(s) owed a fire, found %d", n, owed)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStopWithdrawsAFireNotTaken(t *testing.T) {
	ctx := testContext(t)
	c := New()
	tm := c.NewTimer(time.Minute)
	go func() { _, _ = c.Advance(ctx, time.Minute) }()
	waitOwed(t, c, 1)
	if tm.Stop() { // the advance marked it owed and fired it at once
		t.Error("Stop reported the timer waiting for its deadline; expected the advance to have fired it")
	}
	select {
	case at := <-tm.C():
		t.Fatalf("a stopped timer delivered a fire (%s)", at)
	default:
	}
}

// TestAdvanceWaitsForAfterUntilItsFireIsTaken: the timer of After, which nobody arms
// again, holds an advance up only until its fire is taken.
func TestAdvanceWaitsForAfterUntilItsFireIsTaken(t *testing.T) {
	ctx := testContext(t)
	c := New()
	ch := c.After(time.Minute)
	advanced := make(chan error, 1)
	go func() {
		_, err := c.Advance(ctx, time.Minute)
		advanced <- err
	}()
	<-ch
	if err := <-advanced; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Advance(ctx, time.Minute); err != nil { // nothing left to wait for
		t.Fatal(err)
	}
}

func TestTickerTicksOnceForAnAdvancePastSeveralPeriods(t *testing.T) {
	ctx := testContext(t)
	c := New()
	tk := c.NewTicker(time.Minute)
	defer tk.Stop()
	if _, err := c.Advance(ctx, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tk.C():
	default:
		t.Fatal("Advance(5m) returned and the 1m ticker had not ticked")
	}
	select {
	case <-tk.C():
		t.Fatal("the ticker ticked twice for one advance")
	default:
	}
}

func TestAdvanceRefusesToGoBack(t *testing.T) {
	c := New()
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := c.Advance(context.Background(), d); err == nil || !strings.Contains(err.Error(), "expected a positive duration") {
			t.Errorf("Advance(%s): expected an error naming a positive duration, found %v", d, err)
		}
	}
	if got := c.Offset(); got != 0 {
		t.Errorf("offset after refused advances: %s; expected 0", got)
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9000": true, "127.1.2.3:9000": true, "[::1]:9000": true,
		"0.0.0.0:9000": false, ":9000": false, "localhost:9000": false, "10.0.0.1:9000": false,
		"[::]:9000": false, "127.0.0.1": false,
	} {
		err := CheckLoopback(addr)
		if (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v; expected ok=%t", addr, err, ok)
		}
	}
}

func TestEndpoint(t *testing.T) {
	ctx := testContext(t)
	c := New()
	srv := httptest.NewServer(Handler(c))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	tm := c.NewTimer(10 * time.Minute)
	fired := make(chan time.Time, 1)
	go owner(tm, fired)
	r, err := Advance(ctx, addr, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.Offset != 10*time.Minute {
		t.Errorf("offset after advancing 10m: %s; expected 10m", r.Offset)
	}
	select {
	case <-fired:
	default:
		t.Error("the endpoint answered before the 10m timer fired and its owner stopped it")
	}
	read, err := Read(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if read.Offset != 10*time.Minute || read.Now.Before(r.Now) {
		t.Errorf("reading after the advance: %+v; expected offset 10m and a time not before %s", read, r.Now)
	}

	for _, by := range []string{"-1s", "0s", "soon"} {
		resp, err := http.Post(srv.URL+"/advance?by="+by, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("advance by=%s: status %d; expected %d", by, resp.StatusCode, http.StatusBadRequest)
		}
	}
	if got := c.Offset(); got != 10*time.Minute {
		t.Errorf("offset after refused advances: %s; expected 10m", got)
	}
}
