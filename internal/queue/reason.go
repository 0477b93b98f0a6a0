package queue

import (
	"fmt"
	"strings"

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
	// QueueNotAllowed: the group names a queue that does not admit the group's namespace
	// (Queue.Namespaces). It waits until the queue admits it or the group names another.
	QueueNotAllowed ReasonKind = "QueueNotAllowed"
	// QueueAmbiguous: the group names no queue and more than one queue admits its
	// namespace (Entry.Candidates). muster does not guess: it waits until the group
	// names one of them or only one admits the namespace.
	QueueAmbiguous ReasonKind = "QueueAmbiguous"
	// QuotaExceeded: the group's charge and what the queue's admitted groups hold exceed
	// the quota (and what the queue may borrow from its cohort), or the cohort's unused
	// quota. It waits until quota is released; when the group is within its own queue's
	// quota (Reason.Reclaimable), the quota its queue lent is taken back.
	QuotaExceeded ReasonKind = "QuotaExceeded"
	// QuotaNeverEnough: the group's charge alone exceeds the queue's whole quota, with
	// what it may borrow from its cohort. It is impossible in this queue.
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
	// Queue names the queue, for QueueNotFound, QueueNotAllowed and the quota kinds.
	Queue string
	// Namespace is the group's namespace, for QueueNotAllowed and QueueAmbiguous.
	Namespace string
	// Candidates are the queues that admit the namespace, for QueueAmbiguous.
	Candidates []string
	// Resource, Need, Used and Quota describe the first resource over quota, for the
	// quota kinds: the group needs Need, the queue's admitted groups hold Used of Quota.
	Resource corev1.ResourceName
	Need     int64
	Used     int64
	Quota    int64
	// Cohort names the queue's cohort when the cohort, not the queue, is what is short
	// (QuotaExceeded) or what bounds its borrowing (QuotaNeverEnough); CohortUsed and
	// CohortQuota are then the cohort's usage and summed quota of Resource, and Limit
	// is the most the queue may hold of it, its quota plus what it may borrow.
	Cohort      string
	CohortUsed  int64
	CohortQuota int64
	Limit       int64
	// Reclaimable marks a QuotaExceeded group that is within its own queue's quota: the
	// room it needs is lent to other queues of the cohort, and evicting their borrowing
	// groups gives it back.
	Reclaimable bool
	// BorrowingPaused marks a QuotaExceeded group that would borrow but may not now: a
	// group of another queue of the cohort is reclaiming its queue's quota.
	BorrowingPaused bool
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

// Diagnosed returns the placement diagnosis of the group the reason is about (its own
// member names, when Diagnosis was computed for another group of the same signature),
// or nil when the reason has none.
func (r Reason) Diagnosed() *placement.Diagnosis {
	switch {
	case r.Diagnosis == nil:
		return nil
	case r.subject != nil:
		return r.Diagnosis.For(*r.subject)
	}
	return r.Diagnosis
}

// Resolved returns r with its diagnosis for the group it is about (Diagnosed), which
// costs nothing to read again.
func (r Reason) Resolved() Reason {
	r.Diagnosis, r.subject = r.Diagnosed(), nil
	return r
}

// String renders the reason in one line.
func (r Reason) String() string {
	switch r.Kind {
	case QueueNotFound:
		return fmt.Sprintf("queue %q does not exist", r.Queue)
	case QueueNotAllowed:
		return fmt.Sprintf("queue %q does not admit namespace %q: its spec.namespaceSelector does not select the namespace", r.Queue, r.Namespace)
	case QueueAmbiguous:
		return fmt.Sprintf("names no queue, and %d queues admit namespace %q: %s; name one with the muster.dev/queue annotation",
			len(r.Candidates), r.Namespace, strings.Join(r.Candidates, ", "))
	case QuotaExceeded:
		f := func(v int64) string { return cluster.Format(r.Resource, v) }
		switch {
		case r.Reclaimable:
			return fmt.Sprintf("needs %s %s, within queue %s's quota (%s of %s in use), but cohort %s has %s of %s in use: "+
				"the rest is lent to other queues and is reclaimed", f(r.Need), r.Resource, r.Queue, f(r.Used), f(r.Quota),
				r.Cohort, f(r.CohortUsed), f(r.CohortQuota))
		case r.BorrowingPaused:
			return fmt.Sprintf("needs %s %s, queue %s has %s of %s in use and may not borrow from cohort %s "+
				"while another of its queues reclaims its quota", f(r.Need), r.Resource, r.Queue, f(r.Used), f(r.Quota), r.Cohort)
		case r.Cohort != "":
			return fmt.Sprintf("needs %s %s, queue %s has %s of %s in use (%s with borrowing) and cohort %s has %s of %s in use",
				f(r.Need), r.Resource, r.Queue, f(r.Used), f(r.Quota), f(r.Limit), r.Cohort, f(r.CohortUsed), f(r.CohortQuota))
		}
		return fmt.Sprintf("needs %s %s, queue %s has %s of %s in use", f(r.Need), r.Resource, r.Queue, f(r.Used), f(r.Quota))
	case QuotaNeverEnough:
		if r.Cohort != "" {
			return fmt.Sprintf("needs %s %s, more than queue %s may ever hold: its quota of %s and what it may borrow from cohort %s, %s in all",
				cluster.Format(r.Resource, r.Need), r.Resource, r.Queue, cluster.Format(r.Resource, r.Quota), r.Cohort,
				cluster.Format(r.Resource, r.Limit))
		}
		return fmt.Sprintf("needs %s %s, more than queue %s's whole quota of %s", cluster.Format(r.Resource, r.Need),
			r.Resource, r.Queue, cluster.Format(r.Resource, r.Quota))
	case Placement:
		if d := r.Diagnosed(); d != nil {
			return d.String()
		}
		return "does not fit"
	case Reserved:
		if r.ForPreemption {
			return fmt.Sprintf("fits only on nodes being freed by preemption for group %s", r.ReservedFor)
		}
		return fmt.Sprintf("fits only on nodes reserved for starving group %s", r.ReservedFor)
	}
	return string(r.Kind)
}
