package placement

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
// repelled alike (RunningAntiAffinity.Blocks) share their list. Members of g on s's
// nodes do not count for each other. The forecast plans a member on such a node only
// once those pods are expected to have ended: a JobSet's job kept off the nodes of the
// others (exclusive placement) is not expected to start on them while they run.
func AntiAffinityBlocks(s *cluster.Snapshot, g Group) [][]NodeBlock {
	return NewRunningAntiAffinity(s).Blocks(g)
}

// RunningAntiAffinity is what AntiAffinityBlocks reads of a snapshot's pods with
// required anti-affinity: their terms, parsed once for every member they are checked
// against, by the pods that carry them, and the label keys the terms select by. A
// caller keeps it for the groups it checks while the snapshot's pods stay the same.
type RunningAntiAffinity struct {
	s        *cluster.Snapshot
	nsLabels func(string) labels.Set
	// specs are the pods' anti-affinity, one per namespace and terms, with the pods
	// that carry it (most are a job's, alike).
	specs []antiSpec
	// keys are the label keys the specs' selectors read, sorted: members of one
	// namespace with the same values of them are repelled alike.
	keys []string
	// alike holds the lists of members none of whose group runs, by how they are
	// repelled (repelledAs): the groups of a queue are much alike, and each is checked
	// at every forecast.
	alike map[string][]NodeBlock
}

// antiSpec is required anti-affinity some running pods carry: its terms, and the pods.
type antiSpec struct {
	terms []fwk.AffinityTerm
	pods  []podOn
}

// podOn is a pod, by key, on a node.
type podOn struct {
	key  string
	node *corev1.Node
}

// NewRunningAntiAffinity reads the pods s counts on its nodes that have required pod
// anti-affinity; there are none to read when s says so (HasRequiredAntiAffinity).
func NewRunningAntiAffinity(s *cluster.Snapshot) *RunningAntiAffinity {
	r := &RunningAntiAffinity{s: s, nsLabels: namespaceLabels(s)}
	if !s.HasRequiredAntiAffinity() {
		return r
	}
	index := map[string]int{} // by namespace and terms: the spec's index
	keys := map[string]bool{}
	for _, n := range s.Nodes() {
		for key, p := range n.Pods() {
			if !cluster.RequiresAntiAffinity(p) {
				continue
			}
			id := p.Namespace + "|" + p.Spec.Affinity.PodAntiAffinity.String()
			i, ok := index[id]
			if !ok {
				terms, err := fwk.GetAffinityTerms(p, requiredAntiAffinity(p))
				if err != nil {
					continue // kube-scheduler could not have placed it with terms that do not parse
				}
				for _, t := range terms {
					reqs, _ := t.Selector.Requirements()
					for _, req := range reqs {
						keys[req.Key()] = true
					}
				}
				i = len(r.specs)
				index[id] = i
				r.specs = append(r.specs, antiSpec{terms: terms})
			}
			r.specs[i].pods = append(r.specs[i].pods, podOn{key: key, node: n.Node})
		}
	}
	r.keys = slices.Sorted(maps.Keys(keys))
	return r
}

// Blocks is AntiAffinityBlocks on the snapshot r was read from. Members with the same
// namespace, the same values of the label keys the running pods' terms select by, and
// the same required anti-affinity are repelled alike, and share their list: within a
// group, and across the groups r is asked about none of whose members runs.
func (r *RunningAntiAffinity) Blocks(g Group) [][]NodeBlock {
	own := slices.ContainsFunc(g.Members, func(m Member) bool { return cluster.RequiresAntiAffinity(m.Pod) })
	if !own && len(r.specs) == 0 {
		return nil
	}
	members := make(map[string]bool, len(g.Members))
	running := false // whether a member is counted on a node, and so not blocked by the others
	for _, m := range g.Members {
		key := cluster.PodKey(m.Pod)
		members[key] = true
		running = running || r.s.Bound(key)
	}
	seen := r.alike // by how a member is repelled (repelledAs)
	if running || seen == nil {
		seen = map[string][]NodeBlock{}
		if !running {
			r.alike = seen
		}
	}
	var out [][]NodeBlock
	for i, m := range g.Members {
		as := r.repelledAs(m.Pod)
		list, ok := seen[as]
		if !ok {
			list = r.blocksOf(m.Pod, members)
			seen[as] = list
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

// repelledAs renders what blocksOf reads of p: its namespace, its values of r's keys,
// and its required anti-affinity.
func (r *RunningAntiAffinity) repelledAs(p *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(p.Namespace)
	for _, k := range r.keys {
		if v, ok := p.Labels[k]; ok {
			fmt.Fprintf(&b, "|%s=%s", k, v)
		} else {
			fmt.Fprintf(&b, "|%s", k)
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		b.WriteString("|anti:" + a.PodAntiAffinity.String())
	}
	return b.String()
}

// requiredAntiAffinity returns p's required pod anti-affinity terms.
func requiredAntiAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// topologyPair is one value of a topology key.
type topologyPair struct{ key, value string }

// blocksOf returns the nodes member p may not use by anti-affinity, by name, with the
// pods that keep it off each; nil when none. The pods of members do not count.
func (r *RunningAntiAffinity) blocksOf(p *corev1.Pod, members map[string]bool) []NodeBlock {
	pairs := map[topologyPair][]string{} // the values p may not use, with the pods why
	add := func(node *corev1.Node, key, pod string) {
		if v, ok := node.Labels[key]; ok {
			pairs[topologyPair{key, v}] = append(pairs[topologyPair{key, v}], pod)
		}
	}
	// The running pods whose own terms select p.
	own := r.nsLabels(p.Namespace)
	for _, spec := range r.specs {
		for i := range spec.terms {
			if !spec.terms[i].Matches(p, own) {
				continue
			}
			for _, q := range spec.pods {
				if !members[q.key] {
					add(q.node, spec.terms[i].TopologyKey, q.key)
				}
			}
		}
	}
	// The running pods p's terms select.
	if spec := requiredAntiAffinity(p); len(spec) > 0 {
		if terms, err := fwk.GetAffinityTerms(p, spec); err == nil {
			for _, n := range r.s.Nodes() {
				for key, q := range n.Pods() {
					if members[key] {
						continue
					}
					for i := range terms {
						if terms[i].Matches(q, r.nsLabels(q.Namespace)) {
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
	return blockedNodes(r.s, pairs)
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
