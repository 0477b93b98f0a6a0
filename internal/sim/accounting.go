package sim

import (
	"iter"
	"time"

	"github.com/muster-sched/muster/internal/engine"
)

// Options adjust a world for long replays.
type Options struct {
	// Quiet drops the timeline: a trace replay makes millions of lines nobody reads.
	Quiet bool
	// CollectFinished deletes a finished job's pods and group once the scheduler has seen
	// them succeed, as a TTL-after-finished controller does, so that the scheduler's state
	// stays as small as the running set.
	CollectFinished bool
	// RecordOccupancy keeps the GPU occupancy over time (World.Occupancy).
	RecordOccupancy bool
	// StallThreshold is how long capacity must be held by incomplete groups, with none of
	// them becoming whole, for the interval to count as a deadlock episode (World.Stalls).
	// Zero means 10 minutes.
	StallThreshold time.Duration
}

// Occupancy is the cluster's GPU use from At until the next point.
type Occupancy struct {
	At time.Time
	// Useful is GPUs of jobs that are training.
	Useful int64
	// Starting is GPUs of whole groups that are not training yet (workers not all Ready).
	Starting int64
	// Held is GPUs held by incomplete groups: bound to, or reserved for, a group with
	// fewer than MinMember members bound.
	Held int64
}

// Stall is a deadlock episode: an interval of at least Options.StallThreshold during
// which some group held GPUs while incomplete and no incomplete group became whole.
type Stall struct {
	From, To time.Time
	// PeakHeld is the most GPUs held by incomplete groups during the episode.
	PeakHeld int64
}

// rates is what a job contributes to the world's measures while nothing about it changes.
type rates struct {
	bound, useful, starting, held, beforeReady int64
}

// touch marks a job whose pods or reservations changed; its rates are recomputed before
// simulated time next advances.
func (w *World) touch(j *Job) {
	if w.touched == nil {
		w.touched = map[*Job]bool{}
	}
	w.touched[j] = true
}

// refresh recomputes the rates of touched jobs and the world's totals at w.now.
func (w *World) refresh() {
	if len(w.touched) == 0 {
		return
	}
	progressed := false
	for j := range w.touched {
		old := j.rates
		j.rates = w.ratesOf(j)
		if old.held > 0 && j.rates.held == 0 && j.rates.bound > 0 {
			progressed = true // an incomplete group became whole
		}
		w.total.bound += j.rates.bound - old.bound
		w.total.useful += j.rates.useful - old.useful
		w.total.starting += j.rates.starting - old.starting
		w.total.held += j.rates.held - old.held
		// Only held capacity accrues per job; useful time accrues in the total alone. A
		// month's replay has hundreds of jobs training at a time and a handful holding.
		if j.rates.held > 0 || j.rates.beforeReady > 0 {
			w.accruing[j] = true
		} else {
			delete(w.accruing, j)
		}
	}
	clear(w.touched)
	w.trackStall(progressed)
	if w.opts.RecordOccupancy {
		p := Occupancy{At: w.now, Useful: w.total.useful, Starting: w.total.starting, Held: w.total.held}
		n := len(w.occupancy)
		switch {
		case n > 0 && w.occupancy[n-1].At.Equal(w.now):
			w.occupancy[n-1] = p
		case n == 0 || w.occupancy[n-1] != Occupancy{At: w.occupancy[n-1].At, Useful: p.Useful, Starting: p.Starting, Held: p.Held}:
			w.occupancy = append(w.occupancy, p)
		}
	}
}

func (w *World) ratesOf(j *Job) rates {
	gpus, bound := j.boundGPUs(w)
	r := rates{bound: gpus}
	if bound < j.MinMember {
		r.held = gpus + j.reserved
	}
	if j.Ready.IsZero() {
		r.beforeReady = gpus + j.reserved
	}
	switch {
	case r.held > 0:
	case j.started:
		r.useful = gpus
	default:
		r.starting = gpus
	}
	return r
}

// trackStall opens, extends or closes the current deadlock episode.
func (w *World) trackStall(progressed bool) {
	if progressed || w.total.held == 0 {
		w.closeStall()
	}
	if w.total.held > 0 {
		if w.stall.From.IsZero() {
			w.stall = Stall{From: w.now}
		}
		w.stall.PeakHeld = max(w.stall.PeakHeld, w.total.held)
	}
}

func (w *World) closeStall() {
	if w.stall.From.IsZero() {
		return
	}
	threshold := w.opts.StallThreshold
	if threshold == 0 {
		threshold = 10 * time.Minute
	}
	if w.now.Sub(w.stall.From) >= threshold {
		s := w.stall
		s.To = w.now
		w.stalls = append(w.stalls, s)
	}
	w.stall = Stall{}
}

// Stalls returns the deadlock episodes so far, including one still open at the current
// time if it has lasted long enough.
func (w *World) Stalls() []Stall {
	out := append([]Stall(nil), w.stalls...)
	threshold := w.opts.StallThreshold
	if threshold == 0 {
		threshold = 10 * time.Minute
	}
	if s := w.stall; !s.From.IsZero() && w.now.Sub(s.From) >= threshold {
		s.To = w.now
		out = append(out, s)
	}
	return out
}

// Occupancy returns the recorded GPU occupancy, one point per change.
func (w *World) Occupancy() []Occupancy { return w.occupancy }

// UsefulGPUSeconds is the GPU time spent by jobs while training.
func (w *World) UsefulGPUSeconds() float64 { return w.usefulGPUSeconds }

// advance moves the clock, integrating the held-by-incomplete and useful measures.
func (w *World) advance(t time.Time) {
	if !t.After(w.now) {
		return
	}
	w.refresh()
	d := t.Sub(w.now).Seconds()
	for j := range w.accruing {
		j.HeldIncomplete += float64(j.rates.held) * d
		j.HeldBeforeReady += float64(j.rates.beforeReady) * d
	}
	w.usefulGPUSeconds += float64(w.total.useful) * d
	w.now = t
}

// Reserver is a scheduler that holds capacity for pods it has not bound yet, at a permit
// barrier. The world counts reserved capacity as held by the pods' group.
type Reserver interface {
	// ReservationChanges returns, for each group whose reserved GPUs changed since the
	// last call, the GPUs it reserves now.
	ReservationChanges() map[string]int64
}

// noteReservations applies a Reserver's changes after a Step.
func (w *World) noteReservations() {
	w.notePrediction()
	if w.reserver == nil {
		return
	}
	for key, gpus := range w.reserver.ReservationChanges() {
		if j := w.jobs[shortKey(key)]; j != nil && j.GroupKey() == key {
			j.reserved = gpus
			w.touch(j)
		}
	}
}

// Explainer is a scheduler that says why a group waits, by the kind of its reason
// (engine.Brief's WaitingKind: Unschedulable, Reserved, ...). *engine.Engine implements
// it.
type Explainer interface {
	Brief(key string) (engine.Brief, bool)
}

var _ Explainer = (*engine.Engine)(nil)

// noteFirstWaits records, after a Step, why the scheduler left each job that arrived
// before it waiting (Job.FirstWait).
func (w *World) noteFirstWaits() {
	for _, j := range w.arrived {
		if b, ok := w.explainer.Brief(j.GroupKey()); ok {
			j.FirstWait = b.WaitingKind
		}
	}
	clear(w.arrived)
	w.arrived = w.arrived[:0]
}

// Predictor is a scheduler that forecasts when queued groups start: when it last made
// a forecast, and the expected start of each queued group that has one, by key.
// *engine.Engine implements it.
type Predictor interface {
	Forecast() (made time.Time, starts iter.Seq2[string, time.Time])
}

// notePrediction records, for every job queued when the scheduler made a new forecast,
// the first start predicted for it, to measure against the start it got
// (Summary.StartError).
func (w *World) notePrediction() {
	if w.predictor == nil {
		return
	}
	made, starts := w.predictor.Forecast()
	if made.IsZero() || made.Equal(w.forecastSeen) {
		return
	}
	w.forecastSeen = made
	if len(w.unpredicted) == 0 {
		return
	}
	for key, start := range starts {
		if j := w.unpredicted[key]; j != nil {
			j.Predicted = start
			delete(w.unpredicted, key)
			if len(w.unpredicted) == 0 {
				break
			}
		}
	}
}

// stopPredicting drops j from the jobs notePrediction looks for.
func (w *World) stopPredicting(j *Job) {
	if key := j.GroupKey(); w.unpredicted[key] == j {
		delete(w.unpredicted, key)
	}
}
