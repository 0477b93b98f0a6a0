package explain

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
)

// recordedWait is the scheduler's recorded reason why a group waits, as explain reads
// it: the typed reason (GroupLifecycle.Wait), or, in a record written before muster
// recorded one, a reason with only the kind (from WaitingKind). typed tells them apart:
// without it the fixes say less, and only what the kind alone supports.
type recordedWait struct {
	musterv1alpha1.WaitReason
	typed bool
}

// waitOf reads the recorded wait reason of lc.
func waitOf(lc *musterv1alpha1.GroupLifecycle) recordedWait {
	if lc.Wait != nil {
		return recordedWait{WaitReason: *lc.Wait, typed: true}
	}
	w := musterv1alpha1.WaitReason{Kind: musterv1alpha1.WaitKind(lc.WaitingKind), Queue: lc.Queue}
	switch placement.Code(lc.WaitingKind) {
	case placement.Unschedulable, placement.Impossible:
		w.Kind = musterv1alpha1.WaitPlacement
	}
	return recordedWait{WaitReason: w}
}

// text is the reason in one line: the record's own text, or, when a record has only the
// typed reason, the queue's rendering of it.
func (w recordedWait) text(lc *musterv1alpha1.GroupLifecycle) string {
	if lc.Waiting != "" || !w.typed {
		return lc.Waiting
	}
	return engine.ReasonOf(w.WaitReason).String()
}

// impossibleFix is the fix for a group that can never be admitted as it is.
func impossibleFix(w recordedWait) string {
	if w.Kind == musterv1alpha1.WaitQuotaNeverEnough {
		return "raise the Queue's spec.quota or submit to a queue with more quota; retries will not help"
	}
	if x := w.ExtendedByDRA; x != nil {
		return fmt.Sprintf("ask for at most as many %s per member as one node has devices of DeviceClass %s, "+
			"or add nodes with more of them; retries will not help", x.Resource, x.DeviceClass)
	}
	const generic = "change the member shape (requests, nodeSelector, tolerations, topology) or add nodes that can hold it; retries will not help"
	d := w.Placement
	if d == nil {
		return generic
	}
	if d.MinMember > d.Members {
		return fmt.Sprintf("lower minMember to at most the group's %d members, or add members; retries will not help", d.Members)
	}
	for _, s := range d.Shapes {
		if sf := s.Shortfall; sf != nil {
			return fmt.Sprintf("ask for at most %s %s per member of %s, or add nodes with at least %s; retries will not help",
				quantity(sf.Largest), sf.Resource, s.Shape, quantity(sf.Need))
		}
	}
	top, ok := topReason(d)
	if !ok {
		return generic
	}
	if placement.ReasonKind(top.Kind) == placement.FilterRejected {
		return filterFix(top) + "; retries will not help"
	}
	switch placement.ReasonKind(top.Kind) {
	case placement.UntoleratedTaint:
		return "tolerate taint " + top.Detail + " in the pod template if the members may run there, or add nodes without it; retries will not help"
	case placement.NodeAffinityMismatch:
		return "fix the members' nodeSelector or node affinity, or label nodes to match it; retries will not help"
	case placement.MissingTopologyLabel:
		return "label the nodes with " + top.Detail + ", or relax the group's topology (muster.dev/topology); retries will not help"
	}
	return generic
}

// waitingFix is the fix for a group waiting in its queue. cohort is the cohort of the
// group's queue as its Queue object says, for records that do not name it.
func waitingFix(w recordedWait, queue, cohort string) string {
	if w.Queue != "" {
		queue = w.Queue
	}
	switch w.Kind {
	case musterv1alpha1.WaitQuotaExceeded:
		return quotaFix(w, queue, cohort)
	case musterv1alpha1.WaitQueueNotFound:
		return "create Queue " + queue + " or fix the group's muster.dev/queue"
	case musterv1alpha1.WaitQueueNotAllowed:
		return "name a queue whose spec.namespaceSelector selects this namespace (kubectl muster get queues lists them), " +
			"or ask the queue's owner to select the namespace; the group holds nothing meanwhile"
	case musterv1alpha1.WaitQueueAmbiguous:
		which := "one of the queues"
		if len(w.Candidates) > 0 {
			which = "one of " + strings.Join(w.Candidates, ", ")
		}
		return "name " + which + " with the muster.dev/queue annotation, or ask the platform team to narrow their namespaceSelectors"
	case musterv1alpha1.WaitReserved:
		switch {
		case w.ForPreemption && w.ReservedFor != "":
			return "wait: the nodes it fits on are being freed by preemption for group " + w.ReservedFor + ", which comes first"
		case w.ReservedFor != "":
			return "wait: capacity is reserved for group " + w.ReservedFor + ", which has waited longer"
		}
		return "wait: capacity is reserved for a group that has waited longer"
	case musterv1alpha1.WaitPlacement:
		return placementFix(w.Placement)
	}
	return "wait for capacity to free up (the group holds nothing meanwhile), or ask for less"
}

// quotaFix is the fix for a group waiting for quota.
func quotaFix(w recordedWait, queue, cohort string) string {
	q := w.Quota
	if q != nil && q.Cohort != "" {
		cohort = q.Cohort
	}
	switch {
	case q != nil && q.Reclaimable:
		return "nothing to do: the group is within its queue's quota and muster takes back what cohort " + cohort +
			" lent, evicting borrowing groups (named above once chosen); it runs when they are gone"
	case q != nil && q.BorrowingPaused:
		return "wait: queue " + queue + " may borrow from cohort " + cohort + " again once another of its queues has taken back its quota; " +
			"or raise spec.quota, or use another queue"
	case cohort != "":
		return "wait: for queue " + queue + "'s running groups to finish, or for what it lent to cohort " + cohort +
			" to be reclaimed (muster evicts borrowing groups for a group within its queue's quota); or raise spec.quota, or use another queue"
	}
	return "wait for queue " + queue + "'s running groups to finish, raise its spec.quota, or use another queue"
}

// placementFix is the fix for a group that does not fit the cluster now, chosen by the
// reason that rejected the most nodes in the scheduler's diagnosis.
func placementFix(d *musterv1alpha1.PlacementDiagnosis) string {
	const wait = "wait for capacity to free up (the group holds nothing meanwhile), or ask for less"
	top, ok := topReason(d)
	if !ok {
		return wait
	}
	n := fmt.Sprintf("%d node(s)", top.Nodes)
	switch placement.ReasonKind(top.Kind) {
	case placement.FilterRejected:
		return filterFix(top) + ", or wait: the group holds nothing meanwhile"
	case placement.InsufficientResource:
		return "wait for " + top.Detail + " to free up (the group holds nothing meanwhile), or ask for less " + top.Detail
	case placement.UntoleratedTaint:
		return n + " have taint " + top.Detail + " that the members do not tolerate: add a toleration to the pod template if they may run there, or wait for room on the others"
	case placement.NodeAffinityMismatch:
		return n + " do not match the members' nodeSelector or node affinity: widen it, or wait for room on the nodes that match"
	case placement.NodeNotReady, placement.NodeUnschedulable:
		return n + " are not ready or are cordoned: wait for them to come back (kubectl get nodes), or ask for less"
	case placement.MissingTopologyLabel, placement.OutsideDomain:
		return "the group's topology (muster.dev/topology) rules out " + n + ": label the nodes, or relax the topology"
	case placement.Reserved:
		return "wait: " + n + " are reserved for a group that has waited longer"
	}
	return wait
}

// filterFix is the fix for nodes one of kube-scheduler's filter plugins rejected, by
// plugin.
func filterFix(top musterv1alpha1.NodeReasonCount) string {
	n := fmt.Sprintf("%d node(s)", top.Nodes)
	switch top.Plugin {
	case "InterPodAffinity":
		return n + " are ruled out by pod affinity or anti-affinity (" + top.Detail + "): with one member per node or domain, " +
			"the group needs as many free nodes or domains as members; add nodes, or relax the rule in the pod template"
	case "PodTopologySpread":
		return n + " would break the members' topologySpreadConstraints: add nodes in the domains that are short, " +
			"or raise maxSkew or use whenUnsatisfiable: ScheduleAnyway"
	case "NodePorts":
		return n + " have the members' hostPort in use by another pod: free the port, or use another hostPort"
	case "VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeVolumeLimits":
		return n + " cannot reach or attach the members' volumes (" + top.Detail + "): check their PersistentVolumeClaims " +
			"(kubectl describe pvc), the volumes' node affinity and the StorageClass"
	}
	return n + " are rejected by kube-scheduler's " + top.Plugin + " (" + top.Detail + ")"
}

// topReason returns the node reason that rejected the most nodes over every shape, or,
// when a filter plugin stopped the best attempt, the one that stopped it.
func topReason(d *musterv1alpha1.PlacementDiagnosis) (musterv1alpha1.NodeReasonCount, bool) {
	var top musterv1alpha1.NodeReasonCount
	found := false
	if d == nil {
		return top, false
	}
	if b := d.Blocked; b != nil {
		for _, r := range b.Shape.Reasons {
			if placement.ReasonKind(r.Kind) == placement.FilterRejected && (!found || r.Nodes > top.Nodes) {
				top, found = r, true
			}
		}
		if found {
			return top, true
		}
	}
	for _, s := range d.Shapes {
		for _, r := range s.Reasons {
			if !found || r.Nodes > top.Nodes {
				top, found = r, true
			}
		}
	}
	return top, found
}

// preemptionHint says, after an attempt's message, how it was preempted; "" when the
// record does not say.
func preemptionHint(how string) string {
	switch lifecycle.Preemption(how) {
	case lifecycle.ByPriority:
		return ": a group of higher priority needed its nodes"
	case lifecycle.ByReclaim:
		return ": it ran on quota its queue borrowed from its cohort, and the lending queue took the quota back"
	}
	return ""
}

// preemptionFix is the fix for a group whose last attempt was preempted: how depends on
// how it was preempted, which records written before muster recorded it do not say.
func preemptionFix(how string) string {
	const priority = "if the job must not be preempted, give its pods a PriorityClass at least as high as the preemptor's, or run it in a Queue of higher priority"
	const reclaim = "the job ran on quota its queue borrowed from its cohort, and the lending queue took it back; jobs that must not be reclaimed should fit their own queue's spec.quota"
	switch lifecycle.Preemption(how) {
	case lifecycle.ByPriority:
		return priority
	case lifecycle.ByReclaim:
		return reclaim
	}
	return priority + "; if it ran on quota borrowed from its cohort, fit it in its own queue's spec.quota"
}

// quantity renders a recorded amount.
func quantity(q resource.Quantity) string { return q.String() }

// whatIf renders explain's own re-run of placement for the group's unplaced members
// (Facts.Fit, Facts.FitsNow): a what-if on the cluster as it is now, labelled so that
// it is never taken for muster's decision, which is the recorded reason above it.
func whatIf(f Facts, w recordedWait) []string {
	switch {
	case f.Fit != nil:
		return []string{"what-if, placed now by explain (not muster's decision): " + f.Fit.String()}
	case f.FitsNow && w.Kind == musterv1alpha1.WaitPlacement:
		return []string{"what-if, placed now by explain (not muster's decision): the unplaced members fit the cluster as it is now; " +
			"muster's diagnosis above is from its last pass, and its next pass admits the group unless quota or order hold it"}
	}
	return nil
}
