package placement

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/muster-sched/muster/internal/cluster"
)

// NodeBlock is a node a member may not use while some running pods do: Pods are their
// keys, sorted.
type NodeBlock struct {
	Node string
	Pods []string
}

// AntiAffinityBlocks returns, for each member of g, the nodes of s it may not use now
// because of required pod anti-affinity between it and the pods s counts on the nodes,
// with the pods that keep it off each, by node name: those in a value of one of its
// anti-affinity terms' keys where a pod the term selects runs, and those in a value of
// a running pod's anti-affinity term's key, where the term selects the member, as
// kube-scheduler's InterPodAffinity filter counts both. A member nothing blocks has nil,
// and the result is nil when nothing blocks any member, as when neither the members nor
// the pods on s have required anti-affinity (most groups on most clusters). Members
// with the same namespace, labels and anti-affinity as the member before them share its
// list. Members of g on s's nodes do not count for each other. The forecast plans a
// member on such a node only once those pods are expected to have ended: a JobSet's
// job kept off the nodes of the others (exclusive placement) is not expected to start
// on them while they run.
func AntiAffinityBlocks(s *cluster.Snapshot, g Group) [][]NodeBlock {
	own := slices.ContainsFunc(g.Members, func(m Member) bool { return cluster.RequiresAntiAffinity(m.Pod) })
	if !own && !s.HasRequiredAntiAffinity() {
		return nil
	}
	b := newBlocker(s, g)
	var out [][]NodeBlock
	var last *corev1.Pod
	var lastList []NodeBlock
	for i, m := range g.Members {
		var list []NodeBlock
		if last != nil && sameAntiAffinity(m.Pod, last) {
			list = lastList
		} else {
			list = b.blocksOf(m.Pod)
			last, lastList = m.Pod, list
		}
		if list == nil {
			continue
		}
		if out == nil {
			out = make([][]NodeBlock, len(g.Members))
		}
		out[i] = list
	}
	return out
}

// sameAntiAffinity reports whether a and b are blocked alike by AntiAffinityBlocks: the
// same namespace, labels and required anti-affinity.
func sameAntiAffinity(a, b *corev1.Pod) bool {
	return a.Namespace == b.Namespace && maps.Equal(a.Labels, b.Labels) &&
		apiequality.Semantic.DeepEqual(requiredAntiAffinity(a), requiredAntiAffinity(b))
}

// requiredAntiAffinity returns p's required pod anti-affinity terms.
func requiredAntiAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// blocker finds the nodes members may not use by anti-affinity on one snapshot, with the
// running pods' own terms parsed once.
type blocker struct {
	s        *cluster.Snapshot
	nsLabels func(string) labels.Set
	// members are the keys of the group's members, which do not count for each other.
	members map[string]bool
	// anti are the running pods with required anti-affinity, with their terms.
	anti []antiPod
}

// antiPod is a running pod with required anti-affinity on node, and its terms.
type antiPod struct {
	key   string
	node  *corev1.Node
	terms []fwk.AffinityTerm
}

// topologyPair is one value of a topology key.
type topologyPair struct{ key, value string }

func newBlocker(s *cluster.Snapshot, g Group) *blocker {
	b := &blocker{s: s, nsLabels: namespaceLabels(s), members: map[string]bool{}}
	for _, m := range g.Members {
		b.members[cluster.PodKey(m.Pod)] = true
	}
	if !s.HasRequiredAntiAffinity() {
		return b
	}
	for _, n := range s.Nodes() {
		for key, p := range n.Pods() {
			if b.members[key] || !cluster.RequiresAntiAffinity(p) {
				continue
			}
			terms, err := fwk.GetAffinityTerms(p, requiredAntiAffinity(p))
			if err != nil {
				continue // kube-scheduler could not have placed it with terms that do not parse
			}
			b.anti = append(b.anti, antiPod{key: key, node: n.Node, terms: terms})
		}
	}
	return b
}

// blocksOf returns the nodes member p may not use by anti-affinity, by name, with the
// pods that keep it off each; nil when none.
func (b *blocker) blocksOf(p *corev1.Pod) []NodeBlock {
	pairs := map[topologyPair][]string{} // the values p may not use, with the pods why
	add := func(node *corev1.Node, key, pod string) {
		if v, ok := node.Labels[key]; ok {
			pairs[topologyPair{key, v}] = append(pairs[topologyPair{key, v}], pod)
		}
	}
	// The running pods whose own terms select p.
	own := b.nsLabels(p.Namespace)
	for _, a := range b.anti {
		for i := range a.terms {
			if a.terms[i].Matches(p, own) {
				add(a.node, a.terms[i].TopologyKey, a.key)
			}
		}
	}
	// The running pods p's terms select.
	if spec := requiredAntiAffinity(p); len(spec) > 0 {
		if terms, err := fwk.GetAffinityTerms(p, spec); err == nil {
			for _, n := range b.s.Nodes() {
				for key, q := range n.Pods() {
					if b.members[key] {
						continue
					}
					for i := range terms {
						if terms[i].Matches(q, b.nsLabels(q.Namespace)) {
							add(n.Node, terms[i].TopologyKey, key)
						}
					}
				}
			}
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return blockedNodes(b.s, pairs)
}

// blockedNodes returns the nodes of s in one of pairs' values, by name, each with the
// pods of all the values it is in, sorted and once each.
func blockedNodes(s *cluster.Snapshot, pairs map[topologyPair][]string) []NodeBlock {
	keys := map[string]bool{}
	for pair, pods := range pairs {
		keys[pair.key] = true
		slices.Sort(pods)
		pairs[pair] = slices.Compact(pods)
	}
	var out []NodeBlock
	for _, n := range s.Nodes() {
		var pods []string
		shared := true // pods is one value's list, shared with the nodes of that value
		for key := range keys {
			v, ok := n.Node.Labels[key]
			if !ok {
				continue
			}
			those := pairs[topologyPair{key, v}]
			switch {
			case those == nil:
			case pods == nil:
				pods = those
			default:
				pods, shared = append(slices.Clone(pods), those...), false
			}
		}
		if pods == nil {
			continue
		}
		if !shared {
			slices.Sort(pods)
			pods = slices.Compact(pods)
		}
		out = append(out, NodeBlock{Node: n.Name(), Pods: pods})
	}
	return out
}
