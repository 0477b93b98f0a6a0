package placement

import (
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
