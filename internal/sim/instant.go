package sim

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// A queueing-delay CDF's first seconds count the jobs that started the instant they
// arrived: every job draws the same time from bind to Ready under every policy, so which
// jobs a policy started at once is what moves its CDF there. InstantStarts compares two
// replays of the same jobs on that.

// startedAtOnce reports whether j was Ready within its own time from bind to Ready, and a
// second, of its submission: bound the instant it arrived.
func startedAtOnce(j *Job) bool {
	return !j.Ready.IsZero() && j.Ready.Sub(j.Submitted)-j.ReadyAfter < time.Second
}

// InstantStarts compares which jobs two replays of the same jobs, a and b, started the
// instant they arrived.
type InstantStarts struct {
	// A and B count the jobs each started at once.
	A, B int
	// Lost are the jobs b started at once and a did not; Gained the other way.
	Lost, Gained int
	// Displaced are the jobs of Lost that arrived while a ran jobs b had not started
	// yet (a had started them earlier); DisplacedGPUs is the mean of the GPUs those jobs
	// of a held then, over Displaced.
	Displaced     int
	DisplacedGPUs float64
	// Full are the jobs of Lost that arrived when a's GPUs in use, just before that
	// instant, left fewer free than the job asks: no policy that does not preempt could
	// have started them at once under a. The others had the GPUs free in sum, and a's
	// reservation, its queue's order or where its free GPUs were kept them waiting.
	// Full needs a's recorded occupancy (Options.RecordOccupancy); without it, it is 0.
	Full int
	// The other jobs of Lost, which had the GPUs free in sum when they arrived, are
	// counted by what kept them waiting under a:
	//   - Reserved: a first said they fit only on capacity reserved for a starving group
	//     (Job.FirstWait; the backfill rule);
	//   - Taken: the jobs a started at that same instant left fewer GPUs free than they
	//     ask (a started others of those that arrived together first);
	//   - Scattered: a first said no node had room for them (Unschedulable), and the GPUs
	//     were still free in sum after that instant: spread over nodes none of which
	//     had enough for one member;
	//   - Other: any other reason, or one a did not say.
	Reserved, Taken, Scattered, Other int
}

// CompareInstantStarts compares a's and b's jobs, matched by name; a job missing from
// either is left out.
func CompareInstantStarts(a, b *World) InstantStarts {
	var c InstantStarts
	other := map[string]*Job{}
	for _, j := range b.Jobs() {
		other[j.Name] = j
	}
	// ahead are the pairs of a job's runs where a started it before b did: only they
	// can have been running under a, and not yet under b, when a job arrived.
	type pair struct{ a, b *Job }
	var ahead, lost []pair
	for _, ja := range a.Jobs() {
		jb := other[ja.Name]
		if jb == nil {
			continue
		}
		atOnceA, atOnceB := startedAtOnce(ja), startedAtOnce(jb)
		c.A += count(atOnceA)
		c.B += count(atOnceB)
		switch {
		case atOnceB && !atOnceA:
			lost = append(lost, pair{ja, jb})
		case atOnceA && !atOnceB:
			c.Gained++
		}
		if !ja.Whole.IsZero() && (jb.Whole.IsZero() || ja.Whole.Before(jb.Whole)) {
			ahead = append(ahead, pair{ja, jb})
		}
	}
	c.Lost = len(lost)
	var gpus int64
	capacity := a.gpus()
	for _, l := range lost {
		at := l.b.Submitted
		if occ, ok := a.occupancyBefore(at); ok && capacity-occ.Useful-occ.Starting-occ.Held < l.a.GPU*int64(l.a.Workers) {
			c.Full++
		} else {
			c.countWhy(a, l.a, capacity)
		}
		var held int64
		for _, p := range ahead {
			runningA := !p.a.Whole.After(at) && (p.a.Finished.IsZero() || p.a.Finished.After(at))
			if runningA && (p.b.Whole.IsZero() || p.b.Whole.After(at)) {
				held += p.a.GPU * int64(p.a.Workers)
			}
		}
		if held > 0 {
			c.Displaced++
			gpus += held
		}
	}
	if c.Displaced > 0 {
		c.DisplacedGPUs = float64(gpus) / float64(c.Displaced)
	}
	return c
}

// countWhy counts a job of Lost that arrived with the GPUs it asks for free in sum under
// a by what kept it waiting there (see InstantStarts).
func (c *InstantStarts) countWhy(a *World, j *Job, capacity int64) {
	switch {
	case j.FirstWait == string(queue.Reserved):
		c.Reserved++
	case a.freeAfter(j.Submitted, capacity) < j.GPU*int64(j.Workers):
		c.Taken++
	case j.FirstWait == string(placement.Unschedulable):
		c.Scattered++
	default:
		c.Other++
	}
}

// freeAfter returns the GPUs the recorded occupancy left free once everything that
// happened at t was done: the last point at or before t. It is capacity without one.
func (w *World) freeAfter(t time.Time, capacity int64) int64 {
	i, found := slices.BinarySearchFunc(w.occupancy, t, func(o Occupancy, t time.Time) int { return o.At.Compare(t) })
	if found {
		i++
	}
	if i == 0 {
		return capacity
	}
	o := w.occupancy[i-1]
	return capacity - o.Useful - o.Starting - o.Held
}

// gpus returns the GPUs the world's nodes have.
func (w *World) gpus() int64 {
	var n int64
	for _, node := range w.nodes {
		q := node.Status.Allocatable[GPU]
		n += q.Value()
	}
	return n
}

// occupancyBefore returns the recorded occupancy in effect just before t: the last point
// before t. It reports false when none was recorded before t.
func (w *World) occupancyBefore(t time.Time) (Occupancy, bool) {
	i, _ := slices.BinarySearchFunc(w.occupancy, t, func(o Occupancy, t time.Time) int { return o.At.Compare(t) })
	if i == 0 {
		return Occupancy{}, false
	}
	return w.occupancy[i-1], true
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteInstantStarts writes, for each policy but muster, how many jobs each started the
// instant they arrived, and why muster did not start at once those the other did: the
// start of the CDFs WriteDominance compares.
func WriteInstantStarts(out io.Writer, names []string, worlds []*World) {
	m := -1
	for i, name := range names {
		if name == "muster" {
			m = i
		}
	}
	if m < 0 || worlds[m] == nil {
		return
	}
	for i, name := range names {
		if i == m || worlds[i] == nil {
			continue
		}
		c := CompareInstantStarts(worlds[m], worlds[i])
		fmt.Fprintf(out, "jobs started the instant they arrived: muster %d, %s %d; %s started %d at once that muster did not, "+
			"%d of them while muster ran jobs %s had not started yet (%.1f GPUs on average), %d when muster had fewer GPUs free than they ask "+
			"(of the other %d, %d waited for a starving group's reservation, %d for GPUs muster gave other jobs at that instant, "+
			"%d for GPUs free on no one node, %d for another reason); "+
			"muster started %d at once that %s did not\n",
			c.A, name, c.B, name, c.Lost, c.Displaced, name, c.DisplacedGPUs, c.Full,
			c.Lost-c.Full, c.Reserved, c.Taken, c.Scattered, c.Other, c.Gained, name)
	}
}
