package placement

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/muster-sched/muster/internal/cluster"
)

// affinityKey returns the node label key whose one value a group's members must share
// by their own required pod affinity, when which value is not decided yet: every member
// asks for the same required pod-affinity terms, each term selects every member, and
// no pod on s matches all of them on a node with one of their keys (the pods
// kube-scheduler counts for them). kube-scheduler then lets the first member go to any
// node that has the terms' keys, and the rest must follow it into its value of each
// key, so the node the first member takes decides whether the others fit: Place tries
// every value, as for a required topology. With terms over several keys it is the key
// with the most values on s's nodes (kubernetes.io/hostname before a zone); the
// hosted filters keep the members within one value of the others. It returns ""
// otherwise, and the hosted InterPodAffinity filter alone judges the members: a
// matching pod already running fixes the values they may take.
func affinityKey(s *cluster.Snapshot, g Group) string {
	if len(g.Members) == 0 {
		return ""
	}
	first := g.Members[0].Pod
	spec := requiredAffinity(first)
	if len(spec) == 0 {
		return ""
	}
	for _, m := range g.Members[1:] {
		if !apiequality.Semantic.DeepEqual(requiredAffinity(m.Pod), spec) {
			return ""
		}
	}
	terms, err := fwk.GetAffinityTerms(first, spec)
	if err != nil {
		return "" // the filter reports terms that do not parse
	}
	nsLabels := namespaceLabels(s)
	for _, m := range g.Members {
		if !matchesAll(terms, m.Pod, nsLabels) {
			return ""
		}
	}
	for _, n := range s.Nodes() {
		if !hasAnyKey(n.Node, terms) {
			continue // kube-scheduler counts no match on a node without the terms' keys
		}
		for _, p := range n.Pods() {
			if matchesAll(terms, p, nsLabels) {
				return ""
			}
		}
	}
	return finestKey(s, terms)
}

// requiredAffinity returns p's required pod-affinity terms.
func requiredAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		return a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// namespaceLabels returns the labels of the namespaces s's objects hold, by name, for
// terms that select namespaces by label.
func namespaceLabels(s *cluster.Snapshot) func(string) labels.Set {
	var namespaces map[string]*corev1.Namespace
	if objs := s.Objects(); objs != nil {
		namespaces = objs.Namespaces
	}
	return func(name string) labels.Set {
		if ns := namespaces[name]; ns != nil {
			return ns.Labels
		}
		return nil
	}
}

// matchesAll reports whether p matches every term, as kube-scheduler counts a pod
// toward an incoming pod's affinity.
func matchesAll(terms []fwk.AffinityTerm, p *corev1.Pod, nsLabels func(string) labels.Set) bool {
	for i := range terms {
		if !terms[i].Matches(p, nsLabels(p.Namespace)) {
			return false
		}
	}
	return true
}

// hasAnyKey reports whether node has the topology key of one of terms.
func hasAnyKey(node *corev1.Node, terms []fwk.AffinityTerm) bool {
	for _, t := range terms {
		if _, ok := node.Labels[t.TopologyKey]; ok {
			return true
		}
	}
	return false
}

// finestKey returns the terms' topology key with the most values on s's nodes, the
// first of them on a tie.
func finestKey(s *cluster.Snapshot, terms []fwk.AffinityTerm) string {
	best, most := "", -1
	for _, t := range terms {
		values := map[string]bool{}
		for _, n := range s.Nodes() {
			if v, ok := n.Node.Labels[t.TopologyKey]; ok {
				values[v] = true
			}
		}
		if len(values) > most {
			best, most = t.TopologyKey, len(values)
		}
	}
	return best
}

// AffinityNodes returns, for each member of g whose required pod affinity selects pods
// already running, the names of s's nodes it may go to by that affinity, sorted: those
// with, for each of its terms, the term's key and a value of it where a pod matching
// all its terms runs, as kube-scheduler counts them. A member whose affinity selects no
// running pod has nil when it matches them itself (the first of such a set may go
// anywhere; see affinityKey), and none when it does not; one without affinity has nil,
// and the result is nil when every member has nil. The forecast
// plans each member only on its nodes: a job held to the zone of a dataset cache is not
// expected to start in another.
func AffinityNodes(s *cluster.Snapshot, g Group) [][]string {
	var out [][]string
	var lastSpec []corev1.PodAffinityTerm
	var lastNodes []string
	nsLabels := namespaceLabels(s)
	for i, m := range g.Members {
		spec := requiredAffinity(m.Pod)
		if len(spec) == 0 {
			continue
		}
		var nodes []string
		if lastSpec != nil && apiequality.Semantic.DeepEqual(spec, lastSpec) {
			nodes = lastNodes
		} else {
			terms, err := fwk.GetAffinityTerms(m.Pod, spec)
			if err != nil {
				continue // the filter reports terms that do not parse
			}
			nodes = nodesBesideMatches(s, terms, nsLabels)
			if nodes == nil && !matchesAll(terms, m.Pod, nsLabels) {
				nodes = []string{} // no match runs, and it is not one itself: no node until one does
			}
			lastSpec, lastNodes = spec, nodes
		}
		if nodes == nil {
			continue
		}
		if out == nil {
			out = make([][]string, len(g.Members))
		}
		out[i] = nodes
	}
	return out
}

// nodesBesideMatches returns the names of s's nodes that have, for each of terms, its
// key and a value of it where a pod matching all of terms runs, sorted; nil when no such
// pod runs on a node with one of the terms' keys.
func nodesBesideMatches(s *cluster.Snapshot, terms []fwk.AffinityTerm, nsLabels func(string) labels.Set) []string {
	values := make([]map[string]bool, len(terms)) // by term: the values where a match runs
	found := false
	for _, n := range s.Nodes() {
		for _, p := range n.Pods() {
			if !matchesAll(terms, p, nsLabels) {
				continue
			}
			for i, t := range terms {
				if v, ok := n.Node.Labels[t.TopologyKey]; ok {
					if values[i] == nil {
						values[i] = map[string]bool{}
					}
					values[i][v], found = true, true
				}
			}
		}
	}
	if !found {
		return nil
	}
	out := []string{}
	for _, n := range s.Nodes() {
		ok := true
		for i, t := range terms {
			v, has := n.Node.Labels[t.TopologyKey]
			ok = ok && has && values[i][v]
		}
		if ok {
			out = append(out, n.Name())
		}
	}
	slices.Sort(out)
	return out
}
