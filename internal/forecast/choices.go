package forecast

import (
	"cmp"
	"fmt"
	"slices"
)

// A group may be planned in more than one way: with each list of its members'
// requests (Group.Variants: its claims' alternatives) and in each of its topology
// domains (Group.Domains). planBest tries them all without taking capacity and plans
// the group with the one it starts earliest with.

// planBest plans g as plan does, with the members' requests (Members, or one of
// Variants) and in the domain (one of Domains) with which it starts earliest, the
// first in order on a tie. Each choice is tried without taking capacity (a dry run,
// which reads only the domain's nodes and gives up at the best start found so far),
// then the group is planned with the best.
func (p *profile) planBest(g Group, tries int) (int64, []string, string) {
	if g.Domains == nil && g.Variants == nil {
		return p.plan(g, tries, nil)
	}
	if g.Domains != nil && len(g.Domains) == 0 {
		return 0, nil, "no node has a value of its required topology key"
	}
	var best Group
	found, bestAt, why := false, int64(0), ""
	for v := range 1 + len(g.Variants) {
		members := g.Members
		if v > 0 {
			members = g.Variants[v-1]
		}
		for d := range max(1, len(g.Domains)) {
			try := g
			try.Members, try.Variants = members, nil
			if g.Domains != nil {
				try = inDomain(try, g.Domains[d])
			}
			dry := &dryRun{}
			if found {
				dry.before = bestAt
			}
			at, _, w := p.plan(try, tries, dry)
			switch {
			case w == laterThanBest:
			case w != "":
				why = cmp.Or(why, w)
			default:
				found, best, bestAt = true, try, at
			}
			if found && bestAt <= p.now {
				return p.plan(best, tries, nil) // none starts earlier than now
			}
		}
	}
	if !found {
		if g.Domains != nil {
			return 0, nil, fmt.Sprintf("in none of the %d domains of its required topology key: %s", len(g.Domains), why)
		}
		return 0, nil, why
	}
	return p.plan(best, tries, nil)
}

// dryRun is a plan that takes no capacity, and gives up with laterThanBest at before
// when before is not zero.
type dryRun struct {
	before int64
}

// laterThanBest is a dry run's reason when it gave up at its before.
const laterThanBest = "later than the best choice"

// inDomain returns g with each member's nodes narrowed to domain, a sorted list.
// Members that shared a list share the narrowed one.
func inDomain(g Group, domain []string) Group {
	nodes := make([][]string, len(g.Members))
	for i := range nodes {
		var in []string
		if i < len(g.Nodes) {
			in = g.Nodes[i]
		}
		switch {
		case in == nil:
			nodes[i] = domain
		case i > 0 && i-1 < len(g.Nodes) && sameSlice(in, g.Nodes[i-1]):
			nodes[i] = nodes[i-1]
		default:
			nodes[i] = intersect(in, domain)
		}
	}
	g.Nodes, g.Domains = nodes, nil
	return g
}

// intersect returns the names of a that are in sorted list b, in a's order.
func intersect(a, b []string) []string {
	out := []string{}
	for _, name := range a {
		if _, found := slices.BinarySearch(b, name); found {
			out = append(out, name)
		}
	}
	return out
}
