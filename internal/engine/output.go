package engine

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Output is what one Step asks the caller to do.
type Output struct {
	// Binds are pods to bind to nodes, in the order given. Each group's binds come after
	// its plan was decided whole; the caller records the plan before the first bind.
	Binds []Bind
	// Evictions are member pods to delete; their controllers recreate them.
	Evictions []Eviction
	// Events are Kubernetes-style events about groups, for the group object.
	Events []Event
	// Released reports groups whose cleanup finished, with how long it took.
	Released []Release
	// Admitted reports the groups admitted in this Step and how long each waited.
	Admitted []Admission
	// Ready reports the groups that became Ready in this Step.
	Ready []Readiness
	// HeldBeforeReady is the resource-seconds that groups held before they were Ready,
	// accumulated during this Step (the increase since the previous Step), per resource.
	HeldBeforeReady map[corev1.ResourceName]float64
	// Decisions counts this Step's admission decisions by result: admitted,
	// unschedulable, impossible, quota, queue-not-found, reserved, preempting.
	Decisions map[string]int
	// Changed holds the groups whose Status may differ from before this Step: those it
	// advanced, stepped, admitted or placed members of. A waiting group whose only news
	// is its diagnosis, re-decided on every admission pass, is not in it; callers that
	// show the diagnosis read every group's Status now and then.
	Changed map[string]bool
	// Dropped lists the groups the engine forgot since the previous Step (cancelled,
	// released and left with no member, or handed off): the caller forgets whatever it
	// keeps per group for them.
	Dropped []string
	// WakeAt is when Step must be called again if nothing else changes (zero: never).
	WakeAt time.Time
}

// Bind asks the caller to bind a pod to a node.
type Bind struct {
	Group string
	Pod   string // namespace/name
	Node  string
}

// Eviction asks the caller to delete a member pod.
type Eviction struct {
	Group   string
	Pod     string
	Reason  string
	Message string
}

// EventType is Normal or Warning, as Kubernetes events.
type EventType string

// Event types.
const (
	Normal  EventType = "Normal"
	Warning EventType = "Warning"
)

// Event is a Kubernetes-style event about a group.
type Event struct {
	Group   string
	Type    EventType
	Reason  string
	Message string
}

// Admission reports an admitted group.
type Admission struct {
	Group string
	Queue string
	// Waited is the time from the group's (re)queueing to its admission.
	Waited time.Duration
}

// Readiness reports a group whose minMember members became Ready.
type Readiness struct {
	Group string
	// After is the time from the attempt's admission to minMember Ready.
	After time.Duration
}

// Release reports a finished cleanup.
type Release struct {
	Group string
	After time.Duration
}

func (o *Output) decision(result string) {
	if o.Decisions == nil {
		o.Decisions = map[string]int{}
	}
	o.Decisions[result]++
}

func (o *Output) touch(key string) {
	if o.Changed == nil {
		o.Changed = map[string]bool{}
	}
	o.Changed[key] = true
}

func (o *Output) held(name corev1.ResourceName, v float64) {
	if o.HeldBeforeReady == nil {
		o.HeldBeforeReady = map[corev1.ResourceName]float64{}
	}
	o.HeldBeforeReady[name] += v
}
