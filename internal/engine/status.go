package engine

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
)

// Status is what the engine knows of one group: the source of conditions, `muster
// explain` and the metrics.
type Status struct {
	Key   string
	Spec  GroupSpec
	Queue string
	// Phase is the lifecycle phase; "" while the group's object has not been seen or its
	// spec is invalid.
	Phase   lifecycle.Phase
	Reason  string
	Message string
	// Invalid is the spec's problems, when it has any.
	Invalid string
	// Waiting is why the last admission pass did not admit the group, in one line (Wait's
	// text, and the preemption in flight for it), and WaitingKind its kind (QueueNotFound,
	// QuotaExceeded, Unschedulable, Impossible, ...).
	Waiting     string
	WaitingKind string
	// Wait is the same reason as data; nil when the group is not waiting.
	Wait *queue.Reason
	// Preempting lists the groups being evicted to make room for this one, while they
	// release their nodes; Reclaiming is true when they are evicted to give its queue
	// back the quota it lent, false when for priority.
	Preempting []string
	Reclaiming bool
	// ExtendedByDRA, for a waiting group, is an extended resource it asks for that no
	// node has and a DeviceClass provides through DRA: the class's devices serve it.
	ExtendedByDRA *musterv1alpha1.ExtendedByDRA
	Observed      lifecycle.Observe
	Policy        lifecycle.Policy
	WakeAt        time.Time
	AdmittedAt    time.Time
	// Attempt counts admissions so far; Attempts lists those that ended.
	Attempt  int
	Attempts []lifecycle.Attempt
	Failures int
	// TimeToReady is from the admission of the attempt that became Ready to minMember Ready.
	TimeToReady     time.Duration
	EverReady       bool
	HeldBeforeReady map[corev1.ResourceName]float64
	Cleanup         time.Duration
	CleanedUp       bool
	// ExpectedStart is when a queued group is expected to be admitted: the expected
	// start of its reservation. Zero when unknown, with why in ExpectedStartUnknown.
	ExpectedStart        time.Time
	ExpectedStartUnknown string
	// Placement maps member pod keys to their nodes, bound or being bound.
	Placement map[string]string
	Domain    string
}

// Group returns the status of the group with key.
func (e *Engine) Group(key string) (Status, bool) {
	g := e.groups[key]
	if g == nil {
		return Status{}, false
	}
	st := Status{
		Key: key, Spec: g.spec, Queue: e.queueOf(g), Invalid: g.invalid,
		WaitingKind: g.waitingKind, Policy: g.policy, Domain: g.domain,
		Placement: map[string]string{},
	}
	if g.waiting != nil {
		w, text := e.waitingNow(g)
		st.Wait, st.Waiting = &w, text
		if st.ExtendedByDRA = e.extendedByDRA(g); st.ExtendedByDRA != nil {
			st.Waiting += "; " + extendedByDRANote(*st.ExtendedByDRA)
		}
	}
	if claims := e.releaseInFlight(g); len(claims) > 0 && g.queued {
		st.Waiting = fmt.Sprintf("its own ResourceClaims are being released from its last attempt (%s); "+
			"it is queued again once they are", strings.Join(claims, ", "))
	}
	if g.objectGone {
		st.Waiting = fmt.Sprintf("its group object went with the member pod that owned it, which muster evicted; "+
			"the group keeps its attempts, out of the queue, until an object of the same name is created again, for at most %s",
			emptyRetention)
	}
	if st.Preempting, st.Reclaiming = e.preemptingFor(key); len(st.Preempting) > 0 && st.Waiting != "" {
		whom := "of lower priority"
		if st.Reclaiming {
			whom = "that borrow its queue's quota"
		}
		st.Waiting += fmt.Sprintf("; preempting %d group(s) %s, which are releasing their nodes: %s",
			len(st.Preempting), whom, strings.Join(st.Preempting, ", "))
		if claims := e.claimsPending(key); len(claims) > 0 {
			st.Waiting += fmt.Sprintf("; %d of their ResourceClaims not deallocated yet: %s", len(claims), strings.Join(claims, ", "))
		}
	}
	for k, p := range g.members {
		if n := g.nodeOf(k, p); n != "" {
			st.Placement[k] = n
		}
	}
	st.Observed = g.observed()
	if !g.started {
		st.Observed.Held = st.Observed.Held.DeepCopy() // the group's copy stays its own
		return st, true
	}
	s := g.state
	st.Phase, st.Reason, st.Message = s.Phase(), s.Reason(), s.Message()
	st.WakeAt, st.AdmittedAt = s.WakeAt(), s.AdmittedAt()
	st.Attempt, st.Attempts, st.Failures = s.Attempt(), s.Attempts(), s.Failures()
	st.TimeToReady, st.EverReady = s.TimeToReady()
	st.HeldBeforeReady = s.HeldBeforeReady()
	st.Cleanup, st.CleanedUp = s.LastCleanup()
	if st.Phase == lifecycle.Queued {
		st.ExpectedStart, st.ExpectedStartUnknown = e.expectedStart(g)
	}
	return st, true
}

// Brief is the part of a group's Status that costs no more than a few field reads: for
// callers that look at every group every second (the per-queue metrics, and the status
// writer's check of whether a group's status is due), where building every group's
// Status, with its placement and observed members, was most of a deep queue's loop.
// Each field is the one of the same name in Status.
type Brief struct {
	Namespace, Name string
	Queue           string
	Phase           lifecycle.Phase
	Reason          string
	Invalid         string
	WaitingKind     string
	WakeAt          time.Time
	Attempt         int
	Failures        int
	ExpectedStart   time.Time
}

// Brief returns the brief status of the group with key: the same fields as Group's.
func (e *Engine) Brief(key string) (Brief, bool) {
	g := e.groups[key]
	if g == nil {
		return Brief{}, false
	}
	b := Brief{Namespace: g.spec.Namespace, Name: g.spec.Name, Queue: e.queueOf(g), Invalid: g.invalid,
		WaitingKind: g.waitingKind}
	if !g.started {
		return b, true
	}
	s := g.state
	b.Phase, b.Reason, b.WakeAt = s.Phase(), s.Reason(), s.WakeAt()
	b.Attempt, b.Failures = s.Attempt(), s.Failures()
	if b.Phase == lifecycle.Queued {
		b.ExpectedStart, _ = e.expectedStart(g)
	}
	return b, true
}

// Held returns what the group with key holds on the nodes, as its Status's
// Observed.Held, without the rest of its Status: the Queues' status reads it of every
// group once a second. The list is shared: callers must not modify it.
func (e *Engine) Held(key string) (corev1.ResourceList, bool) {
	g := e.groups[key]
	if g == nil {
		return nil, false
	}
	return g.observed().Held, true
}

// observed is what a group's Status reports of its members: counted now while it has
// not started, as its lifecycle last observed them since.
func (g *group) observed() lifecycle.Observe {
	if !g.started {
		o, _ := g.observe()
		return o
	}
	return g.state.Observed()
}

// expectedStart returns when a queued group is expected to be admitted, or why that is
// unknown, from the last forecast (see refreshForecast): a group queued since is
// forecast within forecastEvery.
func (e *Engine) expectedStart(g *group) (time.Time, string) {
	if e.preempting[g.key] != nil {
		return time.Time{}, "it waits for the groups preempted for it to release their nodes"
	}
	if why := e.claimsNotMade(g); why != "" {
		return time.Time{}, "muster cannot tell when it can start: " + why
	}
	if !e.waitIsForecast(g) {
		return time.Time{}, "muster cannot tell when it can start: " + string(g.waiting.Kind)
	}
	s, ok := e.forecast.starts[g.key]
	switch {
	case ok && !s.At.IsZero():
		return s.At, ""
	case ok:
		return time.Time{}, s.Unknown
	case len(e.forecast.starts) > forecastDepth:
		return time.Time{}, fmt.Sprintf("muster forecasts the first %d groups in order, and it comes after them", forecastDepth)
	}
	return time.Time{}, fmt.Sprintf("not forecast yet: muster forecasts the queue at most every %s", e.forecastEvery())
}

// Runtime returns how long the group is expected to run and where that comes from
// (RuntimeDeclared, RuntimeDeadline, RuntimeHistory), or zero and why it is unknown.
func (e *Engine) Runtime(key string) (time.Duration, string) {
	g := e.groups[key]
	if g == nil {
		return 0, "no such group"
	}
	return e.runtimeOf(g)
}

// ExpectedStart returns the group holding the starving group's reservation and its
// expected start (zero when unknown), or "" when no group holds one.
func (e *Engine) ExpectedStart() (string, time.Time) { return e.holder, e.holderStart }

// noteReservation records the starving group's reservation after an admission pass
// and marks its holder changed when the holder or its expected start changed.
func (e *Engine) noteReservation(out *Output) {
	var key string
	var start time.Time
	for _, r := range e.queue.Reservations() {
		if !r.Preemption {
			key, start = r.Key, r.Start
		}
	}
	if key == e.holder && start.Equal(e.holderStart) {
		return
	}
	for _, k := range []string{e.holder, key} {
		if k != "" && e.groups[k] != nil {
			e.touch(out, k)
		}
	}
	e.holder, e.holderStart = key, start
}

// Groups returns the keys of every group the engine tracks, sorted.
func (e *Engine) Groups() []string { return sortedKeys(e.groups) }

// waitingNow returns why g waits now, with its diagnosis for g, and its text: the queue's
// reason while g is queued (a pass lists a group only when its kind of reason changes),
// else the one the last pass that listed it gave, or the one g reports while a flip is
// held back (see flipQuiet), so that its kind and text agree. g.waiting must be set.
func (e *Engine) waitingNow(g *group) (queue.Reason, string) {
	r, ok := e.queue.Reason(g.key)
	if !ok {
		return g.resolve(g.waiting)
	}
	if held := heldFlip(g, r); held != nil {
		return g.resolve(held)
	}
	return g.resolve(&r)
}
