package queue

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// ReasonKind classifies why a group waits.
type ReasonKind string

const (
	// QueueNotFound: the group names a queue the Manager does not have. It waits until
	// the queue is set.
	QueueNotFound ReasonKind = "QueueNotFound"
	// QuotaExceeded: the group's charge and what the queue's admitted groups hold exceed
	// the quota. It waits until quota is released.
	QuotaExceeded ReasonKind = "QuotaExceeded"
	// QuotaNeverEnough: the group's charge alone exceeds the queue's whole quota. It is
	// impossible in this queue.
	QuotaNeverEnough ReasonKind = "QuotaNeverEnough"
	// Placement: the group does not fit the cluster; Diagnosis says why, and whether it
	// is impossible.
	Placement ReasonKind = "Placement"
	// Reserved: the group would fit, but only on nodes reserved for a starving group, or
	// being freed by preemption for a group of higher priority.
	Reserved ReasonKind = "Reserved"
)

// Reason says why a group waits. Its String method is the only source of its text.
type Reason struct {
	Kind ReasonKind
	// Queue names the queue, for QueueNotFound and the quota kinds.
	Queue string
	// Resource, Need, Used and Quota describe the first resource over quota, for the
	// quota kinds: the group needs Need, the queue's admitted groups hold Used of Quota.
	Resource corev1.ResourceName
	Need     int64
	Used     int64
	Quota    int64
	// Diagnosis explains a Placement failure.
	Diagnosis *placement.Diagnosis
	// ReservedFor names the group holding the reservation, for Reserved.
	ReservedFor string
	// ForPreemption marks a Reserved reason whose nodes are being freed by preemption.
	ForPreemption bool

	// subject, when set, is the group this reason is about when Diagnosis was computed
	// for another group of the same signature; String renders it for subject.
	subject *placement.Group
}

// Impossible reports whether the group cannot be admitted until the queue's quota or the
// cluster's nodes change: its charge exceeds the whole quota, or it does not fit even an
// empty cluster.
func (r Reason) Impossible() bool {
	switch r.Kind {
	case QuotaNeverEnough:
		return true
	case Placement:
		return r.Diagnosis != nil && r.Diagnosis.Code == placement.Impossible
	}
	return false
}

// String renders the reason in one line.
func (r Reason) String() string {
	switch r.Kind {
	case QueueNotFound:
		return fmt.Sprintf("queue %q does not exist", r.Queue)
	case QuotaExceeded:
		return fmt.Sprintf("needs %s %s, queue %s has %s of %s in use", cluster.Format(r.Resource, r.Need), r.Resource,
			r.Queue, cluster.Format(r.Resource, r.Used), cluster.Format(r.Resource, r.Quota))
	case QuotaNeverEnough:
		return fmt.Sprintf("needs %s %s, more than queue %s's whole quota of %s", cluster.Format(r.Resource, r.Need),
			r.Resource, r.Queue, cluster.Format(r.Resource, r.Quota))
	case Placement:
		if r.Diagnosis == nil {
			return "does not fit"
		}
		if r.subject != nil {
			return r.Diagnosis.For(*r.subject).String()
		}
		return r.Diagnosis.String()
	case Reserved:
		if r.ForPreemption {
			return fmt.Sprintf("fits only on nodes being freed by preemption for group %s", r.ReservedFor)
		}
		return fmt.Sprintf("fits only on nodes reserved for starving group %s", r.ReservedFor)
	}
	return string(r.Kind)
}

// overQuota checks a charge against queue q, given what its admitted groups hold. A
// resource whose charge alone exceeds the quota is reported before one that only exceeds
// it with the usage, so an impossible group is always told so; among equals, the first
// resource by name is reported. Resources the quota does not list are unlimited.
func overQuota(q Queue, used, need cluster.Resources) (Reason, bool) {
	names := make([]corev1.ResourceName, 0, len(q.Quota))
	for name := range q.Quota {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if n := need[name]; n > 0 && n > q.Quota[name] {
			return Reason{Kind: QuotaNeverEnough, Queue: q.Name, Resource: name, Need: n, Used: used[name], Quota: q.Quota[name]}, true
		}
	}
	for _, name := range names {
		if n := need[name]; n > 0 && used[name]+n > q.Quota[name] {
			return Reason{Kind: QuotaExceeded, Queue: q.Name, Resource: name, Need: n, Used: used[name], Quota: q.Quota[name]}, true
		}
	}
	return Reason{}, false
}
