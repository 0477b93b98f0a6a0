// Package forecast predicts when queued groups start. It builds a profile of the
// cluster's free capacity over time, from what each node has free now and what the
// groups running there release when they are expected to end, and plans the queued
// groups into it in queue order: each at the earliest time its members fit whole, for as
// long as it is expected to run (conservative backfill, the way Slurm's backfill
// scheduler plans its queue). A group planned without a run time holds its capacity for
// ever, as does a running group whose end is unknown, so a forecast never counts on
// capacity nobody said would come back.
//
// The profile counts resources, on the nodes each member may use (Group.Nodes: a pool
// its node selector picks, say), one member of a class per node where the group says so
// (Group.Apart: one worker per node), all members in one topology domain where the group
// requires it (Group.Domains: one rack), and on a node that running pods keep a member
// off only once they are expected to have ended (Group.From: pod anti-affinity). Other
// rules between pods and devices are the placement's business, and the forecast of a
// group they constrain is a lower bound. The package is pure: no clock, no API, no
// engine.
package forecast

import (
	"fmt"
	"math"
	"time"

	"github.com/muster-sched/muster/internal/cluster"
)

// Node is a node that takes pods, with what it has free now: Free less Used, so that a
// caller can pass a node's allocatable and requested resources as they are. Names are
// unique.
type Node struct {
	Name string
	Free cluster.Resources
	Used cluster.Resources
	// Gen, when not zero, stands for the node's Free and Used and the Resources of the
	// releases on it, in the order given, Held or not: a Planner given a node under the
	// Gen of an earlier plan's node of the same name reuses what it read of them then.
	// A scheduler forecasts every few seconds, and few nodes change in between.
	Gen uint64
}

// Release is capacity a running group gives back on one node when it is expected to
// end.
type Release struct {
	Node      string
	At        time.Time
	Resources cluster.Resources
	// Held says the capacity does not come back in the forecast (its group's end is
	// unknown): the release is listed only so that a node's releases stay the same
	// under its Gen.
	Held bool
}

// Group is a queued group to plan: the members that must start together.
type Group struct {
	Key string
	// Queue and Charge are the group's queue and what it charges the queue's quota when
	// admitted; without a Quota for the queue they do not matter.
	Queue  string
	Charge cluster.Resources
	// Members are the requests of the members that must start together (MinMember of
	// them). Their pods count is ignored: it is the placement's business.
	Members []cluster.Resources
	// Nodes holds, for each member, the names of the nodes it may be planned on (those
	// its node selector, node affinity and tolerations admit, with devices its claims
	// select, where its volumes may be used); nil for a member, or a nil Nodes, stands
	// for every node. A member may share its slice with others.
	Nodes [][]string
	// From holds, for each member, nodes it may be planned on only in windows that
	// start at or after a time (NodeFrom): running pods its required pod anti-affinity
	// selects, or whose own selects it, keep it off them until they are expected to end.
	// nil for a member, or a nil From, stands for none; a node not in its Nodes stays
	// out of bounds whatever From says. A member may share its slice with others.
	From [][]NodeFrom
	// Apart holds, for each member, a class: no two members of one nonzero class are
	// planned on one node (their pod anti-affinity, or a host port, keeps them apart);
	// nil for none.
	Apart []int
	// Variants, when not nil, are other lists of the Members' requests, in order of
	// preference (claims whose requests list alternatives: the second alternative of
	// each, the third, ...): the group is planned with the list, Members first, with
	// which it starts earliest (the first on a tie).
	Variants [][]cluster.Resources
	// Domains, when not nil, are the node sets of the values of the group's required
	// topology key (one rack, one zone, one NVLink clique), each sorted: its members are
	// all planned on the nodes of one of them, the one where they start earliest (the
	// first such on a tie). An empty, non-nil Domains leaves the group no node.
	Domains [][]string
	// Runtime is how long the group is expected to run once started; zero when unknown,
	// and the group then holds what it is planned on for ever.
	Runtime time.Duration
}

// NodeFrom is a node a member may be planned on only in windows that start at or after
// At; a zero At stands for never (pods that keep the member off the node with no
// expected end: pods that are not muster's, or groups with no expected run time).
type NodeFrom struct {
	Node string
	At   time.Time
}

// Start is a group's predicted start, or why there is none.
type Start struct {
	Key string
	// At is when the group is expected to start; zero when unknown.
	At time.Time
	// Unknown says why At is zero.
	Unknown string
	// Nodes are the nodes the group is planned on at At, sorted.
	Nodes []string
}

// Options bound a forecast's work.
type Options struct {
	// Depth is how many groups are planned, in order; later ones are unknown. Zero
	// plans every group.
	Depth int
	// Tries is how many of the times at which capacity is freed are tried per group
	// before it is given up as unknown. Zero tries every time.
	Tries int
}

// never is the end of capacity that does not come back.
const never = math.MaxInt64

// Plan predicts the start of each of groups, given in queue order, at time now, on
// nodes with releases, within the quotas of their queues. It returns one Start per
// group, in the same order.
func Plan(now time.Time, nodes []Node, releases []Release, quotas []Quota, groups []Group, opts Options) []Start {
	var pl Planner
	return pl.Plan(now, nodes, releases, quotas, groups, opts)
}

// Planner plans as Plan does, in the memory of its last plan: a scheduler forecasts its
// queue every few seconds, on much the same nodes. The zero Planner is ready to use; it
// is not safe for concurrent use, and keeps none of its arguments.
type Planner struct {
	p profile
}

// Plan is Plan in the planner's memory.
func (pl *Planner) Plan(now time.Time, nodes []Node, releases []Release, quotas []Quota, groups []Group, opts Options) []Start {
	p := &pl.p
	p.reset(now, nodes, releases, groups)
	p.addQuotas(quotas)
	out := make([]Start, len(groups))
	for i, g := range groups {
		out[i].Key = g.Key
		switch {
		case opts.Depth > 0 && i >= opts.Depth:
			out[i].Unknown = fmt.Sprintf("muster forecasts the first %d groups in order, and it comes after them", opts.Depth)
		case len(g.Members) == 0:
			out[i].Unknown = "it has no member to place"
		default:
			at, nodes, why := p.planBest(g, opts.Tries)
			if why != "" {
				out[i].Unknown = why
			} else {
				out[i].At, out[i].Nodes = time.Unix(0, at).UTC(), nodes
			}
		}
	}
	return out
}
