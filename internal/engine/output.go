package engine

import "time"

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

// Release reports a finished cleanup.
type Release struct {
	Group string
	After time.Duration
}
