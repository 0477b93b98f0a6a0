package placement

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// Code classifies a failed placement; the queue and lifecycle branch on it.
type Code string

const (
	// Unschedulable: the group would fit the cluster if it were empty, but not now. The
	// group waits in its queue and is tried again when capacity is released.
	Unschedulable Code = "Unschedulable"
	// Impossible: the group cannot fit even an empty cluster with every node healthy. The
	// group is not retried on a timer, only re-checked when nodes change.
	Impossible Code = "Impossible"
)

// ReasonKind names why a node was rejected for a member, in kube-scheduler's terms.
type ReasonKind string

// Node rejection reasons. Each renders as upstream kube-scheduler's filter message.
const (
	NodeNotReady         ReasonKind = "NodeNotReady"
	NodeUnschedulable    ReasonKind = "NodeUnschedulable"
	NodeAffinityMismatch ReasonKind = "NodeAffinityMismatch"
	UntoleratedTaint     ReasonKind = "UntoleratedTaint"
	InsufficientResource ReasonKind = "InsufficientResource"
	TooManyPods          ReasonKind = "TooManyPods"
	MissingTopologyLabel ReasonKind = "MissingTopologyLabel"
	OutsideDomain        ReasonKind = "OutsideDomain"
	Reserved             ReasonKind = "Reserved"
	NodeNotFound         ReasonKind = "NodeNotFound"
)

// NodeReason is one reason a node cannot take a member. Detail carries the taint, resource
// name, label key or domain the reason is about, or a hosted plugin's message; Plugin
// names the kube-scheduler plugin that rejected the node (FilterRejected only).
type NodeReason struct {
	Kind   ReasonKind
	Detail string
	Plugin string
}

// String renders the reason as kube-scheduler's filters do.
func (r NodeReason) String() string {
	switch r.Kind {
	case NodeNotReady:
		return "node(s) were not ready"
	case NodeUnschedulable:
		return "node(s) were unschedulable"
	case NodeAffinityMismatch:
		return "node(s) didn't match Pod's node affinity/selector"
	case UntoleratedTaint:
		return "node(s) had untolerated taint " + r.Detail
	case InsufficientResource:
		return "Insufficient " + r.Detail
	case TooManyPods:
		return "Too many pods"
	case MissingTopologyLabel:
		return "node(s) lacked topology label " + r.Detail
	case OutsideDomain:
		return "node(s) were outside the group's domain " + r.Detail
	case Reserved:
		return "node(s) were reserved for a waiting group"
	case NodeNotFound:
		return "node " + r.Detail + " does not exist"
	case FilterRejected:
		return r.Detail
	}
	return string(r.Kind) + " " + r.Detail
}

// ReasonCount is a reason with the number of nodes it applied to.
type ReasonCount struct {
	NodeReason
	Nodes int
}

// Shortfall says that no eligible node, even empty, has enough of one resource for one
// member: "needs 8 nvidia.com/gpu on one node; largest eligible node has 4".
type Shortfall struct {
	Resource corev1.ResourceName
	Need     int64
	Largest  int64
	// Eligible counts the nodes that passed every other predicate.
	Eligible int
}

// ShapeDiagnosis explains one shape of members: identical pods of the group.
type ShapeDiagnosis struct {
	// Shape names the shape by its first member and count ("job-worker-0 ×8").
	Shape string
	// Members is the number of members of this shape.
	Members int
	// Requests is what one member asks of a node. It may be shared with other diagnoses
	// of the shape: it must not be modified, as Reasons.
	Requests cluster.Resources
	// Nodes is the number of nodes considered; Available of them could take one member now.
	Nodes, Available int
	// Room is how many members of this shape the available nodes could take now, alone.
	Room int
	// Reasons counts the nodes rejected for each reason, most frequent first.
	Reasons []ReasonCount
	// Shortfall is set when the shape fits no eligible node even on an empty cluster.
	Shortfall *Shortfall
}

// Diagnosis explains why a group could not be placed. It is the only source of the text
// that conditions, events and `muster explain` show.
type Diagnosis struct {
	Code      Code
	Group     string
	MinMember int
	Members   int
	// Placed is how many members the best attempt could place before it gave up.
	Placed int
	Shapes []ShapeDiagnosis
	// EmptyRoom, for an Impossible group whose every shape fits some node, is how many
	// members an empty cluster could take.
	EmptyRoom int
	// Topology explains a required-domain failure, when there was one.
	Topology string
	// Blocked, when a hosted kube-scheduler filter stopped the best attempt, says after
	// how many members and why the next fit no node: the rule that keeps the group out
	// (on the empty cluster, for an Impossible group).
	Blocked *Blocked
	// Task, when set, is the task whose minimum (Group.TaskMinimums) kept the group out:
	// it has fewer members than its minimum (Impossible), or the best attempt that
	// placed enough members in all could not place its minimum.
	Task *TaskShortfall
}

// TaskShortfall is a task of a group that is short of its minimum.
type TaskShortfall struct {
	Task string
	// Minimum is the members of the task the group needs; Members how many it has.
	Minimum, Members int
	// Placed, for a placement that failed on it, is how many of the task's Minimum
	// members the best attempt placed.
	Placed int
}

// text renders t: "task ps has 0 members; its minimum is 1", or "task ps: 0 of its
// minimum 1 members can be placed with the others".
func (t *TaskShortfall) text(impossible bool) string {
	if impossible {
		return fmt.Sprintf("task %s has %d members; its minimum is %d", t.Task, t.Members, t.Minimum)
	}
	return fmt.Sprintf("task %s: %d of its minimum %d members can be placed with the others", t.Task, t.Placed, t.Minimum)
}

// Blocked is where a placement attempt stopped: Placed members were assumed, and Shape
// counts why no node could take the next member of its shape.
type Blocked struct {
	Placed int
	Shape  ShapeDiagnosis
}

// ifFiltered returns b when one of its reasons is a hosted filter's, else nil: the other
// reasons are in the shapes' own diagnoses already.
func (b *Blocked) ifFiltered() *Blocked {
	if b == nil {
		return nil
	}
	for _, r := range b.Shape.Reasons {
		if r.Kind == FilterRejected {
			return b
		}
	}
	return nil
}

// text renders b: "with 4 members placed, job-worker-0 ×5 fits no more: 0/4 nodes are
// available: 4 node(s) didn't match pod anti-affinity rules".
func (b *Blocked) text() string {
	return fmt.Sprintf("with %d members placed, %s fits no more: %s", b.Placed, b.Shape.Shape,
		nodesText(b.Shape.Available, b.Shape.Nodes, b.Shape.Reasons, "available"))
}

// Error makes a Diagnosis usable as an error.
func (d *Diagnosis) Error() string { return d.String() }

// String renders the diagnosis in one line per shape, joined by "; ". A queue renders
// the diagnosis of each group whose kind of reason changes, so the common case, an
// Unschedulable group, is written without fmt.
func (d *Diagnosis) String() string {
	var b strings.Builder
	b.Grow(64 + 160*len(d.Shapes))
	if d.Code == Impossible {
		b.WriteString(strings.Join(d.impossibleText(), "; "))
	} else {
		b.WriteString(strconv.Itoa(d.Placed))
		b.WriteString(" of minMember ")
		b.WriteString(strconv.Itoa(d.MinMember))
		b.WriteString(" members can be placed now")
		for _, s := range d.Shapes {
			b.WriteString("; ")
			b.WriteString(s.Shape)
			b.WriteByte(' ')
			s.Requests.Render(&b)
			b.WriteString(": ")
			writeNodesText(&b, s.Available, s.Nodes, s.Reasons, "available")
		}
	}
	if d.Task != nil && d.Code != Impossible {
		b.WriteString("; ")
		b.WriteString(d.Task.text(false))
	}
	if d.Blocked != nil {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Blocked.text())
	}
	if d.Topology != "" {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Topology)
	}
	return b.String()
}

func (d *Diagnosis) impossibleText() []string {
	if d.MinMember > d.Members {
		return []string{fmt.Sprintf("minMember %d is larger than the group's %d members", d.MinMember, d.Members)}
	}
	if d.Task != nil && d.Task.Members < d.Task.Minimum {
		return []string{d.Task.text(true)}
	}
	var parts []string
	for _, s := range d.Shapes {
		switch {
		case s.Shortfall != nil:
			parts = append(parts, fmt.Sprintf("%s needs %s %s on one node; largest eligible node has %s",
				s.Shape, cluster.Format(s.Shortfall.Resource, s.Shortfall.Need), s.Shortfall.Resource,
				cluster.Format(s.Shortfall.Resource, s.Shortfall.Largest)))
		case s.Available == 0 && len(s.Reasons) > 0:
			parts = append(parts, fmt.Sprintf("%s %s: %s", s.Shape, s.Requests, nodesText(0, s.Nodes, s.Reasons, "eligible")))
		}
	}
	if len(parts) == 0 && d.Task != nil {
		parts = append(parts, d.Task.text(false)+", even on the empty cluster")
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("group needs %d members on one placement; the whole cluster, empty, can take %d",
			d.MinMember, d.EmptyRoom))
	}
	return parts
}

// nodesText renders "0/8 nodes are available: 4 Insufficient nvidia.com/gpu, 4 node(s) had
// untolerated taint {gpu: a100}", as kube-scheduler's FitError does.
func nodesText(ok, total int, reasons []ReasonCount, word string) string {
	var b strings.Builder
	writeNodesText(&b, ok, total, reasons, word)
	return b.String()
}

// writeNodesText writes nodesText to b.
func writeNodesText(b *strings.Builder, ok, total int, reasons []ReasonCount, word string) {
	b.WriteString(strconv.Itoa(ok))
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(total))
	b.WriteString(" nodes are ")
	b.WriteString(word)
	for i, r := range reasons {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(r.Nodes))
		b.WriteByte(' ')
		b.WriteString(r.NodeReason.String())
	}
}

// tally counts nodes by reason. The reasons of one diagnosis are few, so a list
// searched in turn is cheaper than a map.
type tally []ReasonCount

func (t *tally) add(r NodeReason) { t.addN(r, 1) }

// addN counts n more nodes for r, or fewer when n is negative: a reason no node has any
// more is dropped, so that a survey kept up to date reports what a new one would.
func (t *tally) addN(r NodeReason, n int) {
	for i := range *t {
		if (*t)[i].NodeReason == r {
			if (*t)[i].Nodes += n; (*t)[i].Nodes == 0 {
				*t = append((*t)[:i], (*t)[i+1:]...)
			}
			return
		}
	}
	*t = append(*t, ReasonCount{NodeReason: r, Nodes: n})
}

// sorted returns the counts sorted: most nodes first, then text.
func (t tally) sorted() []ReasonCount {
	out := slices.Clone(t)
	tally(out).sort()
	if out == nil {
		out = []ReasonCount{}
	}
	return out
}

// sort sorts t in place, as sorted.
func (t tally) sort() {
	slices.SortFunc(t, func(a, b ReasonCount) int {
		if c := cmp.Compare(b.Nodes, a.Nodes); c != 0 {
			return c
		}
		return strings.Compare(a.String(), b.String())
	})
}
