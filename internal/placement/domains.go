package placement

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/muster-sched/muster/internal/cluster"
)

// A group may have to keep within one domain: one value of its required topology key,
// one value of the key its members' own pod affinity keeps them in, or both. Placement
// tries each domain and keeps the best; a preferred key orders the nodes within one.

// placeInDomain tries each domain the group must keep within (see domainChoicesOf) and
// keeps the one whose placement uses the fewest values of the preferred key (with
// one), then breaks the fewest whole nodes, then fits the tightest, then comes first.
// The plan's Domain is the required key's value, which pins the group's later members;
// the members' own pod affinity needs no pin, since their running pods hold the rest.
func (p *placer) placeInDomain(required, affinity string) *Plan {
	choices := domainChoicesOf(p.snap.Nodes(), required, p.g.Topology.Domain, affinity)
	best, bestSpread, bestBroken, bestFree := -1, 0, 0, int64(0)
	for i, c := range choices {
		a := p.fill(p.tiers(c.nodes))
		placed, spread := len(a.assignments), p.spread(a)
		a.revert()
		p.best = max(p.best, placed)
		if !p.enough(a) {
			continue
		}
		free := freeOf(c.nodes, p.scarce)
		better := cmp.Or(cmp.Compare(spread, bestSpread), cmp.Compare(a.broken, bestBroken), cmp.Compare(free, bestFree)) < 0
		if best < 0 || better {
			best, bestSpread, bestBroken, bestFree = i, spread, a.broken, free
		}
	}
	if best < 0 {
		p.topology = p.noDomain(required, affinity, choices)
		return nil
	}
	a := p.fill(p.tiers(choices[best].nodes))
	return p.plan(a, choices[best].value)
}

// noDomain says why no domain could take the group.
func (p *placer) noDomain(required, affinity string, choices []domainChoice) string {
	if required == "" {
		return fmt.Sprintf("their required pod affinity to each other keeps them within one value of %s, and none among %d can take %d members (the best takes %d)",
			affinity, len(choices), p.g.MinMember, p.best)
	}
	values := 0
	for i, c := range choices {
		if i == 0 || c.value != choices[i-1].value {
			values++
		}
	}
	if affinity == "" {
		return fmt.Sprintf("no value of %s among %d can take %d members (the best takes %d)", required, values, p.g.MinMember, p.best)
	}
	return fmt.Sprintf("no value of %s among %d can take %d members within one value of %s, where their required pod affinity to each other keeps them (the best takes %d)",
		required, values, p.g.MinMember, affinity, p.best)
}

// domainKeys returns the keys g must keep within one value of: its required topology
// key, and the key its members' own pod affinity keeps them in when placement chooses
// its value (see affinityKey), "" when that is none or the same key.
func domainKeys(s *cluster.Snapshot, g Group) (required, affinity string) {
	required, affinity = g.Topology.Required, affinityKey(s, g)
	if affinity == required {
		affinity = ""
	}
	return required, affinity
}

// domainChoice is a set of nodes a group may be placed within, and its value of the
// required topology key ("" without one).
type domainChoice struct {
	value string
	nodes []*cluster.NodeInfo
}

// domainChoicesOf returns the sets of nodes a group may be placed within: those sharing
// a value of the required key (only pinned's, when set), each split further by the
// values of affinity, the key the members' own pod affinity keeps them within (see
// affinityKey), when it is set; by that key alone without a required one. The sets come
// in order of the values, the required key's first; nodes without a key are in none.
func domainChoicesOf(nodes []*cluster.NodeInfo, required, pinned, affinity string) []domainChoice {
	var out []domainChoice
	if required == "" {
		domains, names := domainsOf(nodes, affinity)
		for _, name := range names {
			out = append(out, domainChoice{nodes: domains[name]})
		}
		return out
	}
	domains, names := domainsOf(nodes, required)
	for _, name := range names {
		if pinned != "" && name != pinned {
			continue
		}
		if affinity == "" {
			out = append(out, domainChoice{value: name, nodes: domains[name]})
			continue
		}
		inner, innerNames := domainsOf(domains[name], affinity)
		for _, in := range innerNames {
			out = append(out, domainChoice{value: name, nodes: inner[in]})
		}
	}
	return out
}

// spread counts the values of the preferred key an attempt's nodes have (nodes without
// the label count as one more); 0 without a preferred key.
func (p *placer) spread(a *attempt) int {
	key := p.g.Topology.Preferred
	if key == "" {
		return 0
	}
	values := map[string]bool{}
	for _, as := range a.assignments {
		n := p.snap.Node(as.Node)
		if n == nil {
			continue
		}
		v, ok := n.Node.Labels[key]
		if !ok {
			v = "\x00unlabelled"
		}
		values[v] = true
	}
	return len(values)
}

// domainsOf groups nodes by their value of key, with the values sorted; nodes without
// the label are left out.
func domainsOf(nodes []*cluster.NodeInfo, key string) (map[string][]*cluster.NodeInfo, []string) {
	out := map[string][]*cluster.NodeInfo{}
	for _, n := range nodes {
		if v, ok := n.Node.Labels[key]; ok {
			out[v] = append(out[v], n)
		}
	}
	names := make([]string, 0, len(out))
	for v := range out {
		names = append(names, v)
	}
	slices.Sort(names)
	return out, names
}

// preferredTiers groups nodes by their value of key, the values ordered by how many
// members of the group's first shape they can take now, largest first, so that filling
// them in order uses the fewest values. Nodes without the label come last.
func (p *placer) preferredTiers(key string, nodes []*cluster.NodeInfo) [][]*cluster.NodeInfo {
	domains, names := domainsOf(nodes, key)
	room := map[string]int{}
	for _, name := range names {
		for _, n := range domains[name] {
			if _, bad := p.reject(n, p.shapes[0]); !bad {
				room[name] += p.shapes[0].fits(n)
			}
		}
	}
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(room[b], room[a]) })
	tiers := make([][]*cluster.NodeInfo, 0, len(names)+1)
	for _, name := range names {
		tiers = append(tiers, domains[name])
	}
	var rest []*cluster.NodeInfo
	for _, n := range nodes {
		if _, ok := n.Node.Labels[key]; !ok {
			rest = append(rest, n)
		}
	}
	return append(tiers, rest)
}
