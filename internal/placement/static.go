package placement

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/muster-sched/muster/internal/cluster"
)

// NodesAdmitting returns, for each member of g, the names of the nodes of s whose static
// rules admit it, in the snapshot's order: node affinity and selector, and taints, what
// depends on the node's object alone (readiness and cordon are the caller's to judge).
// A member every node admits has nil, and so has the whole result when every node admits
// every member, which is most groups on most clusters. The forecast plans each member
// only on its nodes, so that a group held to one pool of nodes is not expected to start
// on another.
//
// Each shape's nodes are found once while s's nodes stay the same (Snapshot.Surveys,
// emptied when a node is set or removed).
func NodesAdmitting(s *cluster.Snapshot, g Group) [][]string {
	memo := s.Surveys()
	var out [][]string
	for _, f := range shapeSetOf(g).forms {
		nodes := admitting(s, memo, f)
		if nodes == nil {
			continue
		}
		if out == nil {
			out = make([][]string, len(g.Members))
		}
		for i, m := range g.Members {
			if memberKey(m) == f.key {
				out[i] = nodes
			}
		}
	}
	return out
}

// admitKey keys, in a snapshot's Surveys, the nodes that admit the pods of a shape.
type admitKey struct{ shape string }

// taintedKey keys, in a snapshot's Surveys, whether some node has a taint that forbids
// scheduling.
type taintedKey struct{}

// admitting returns the nodes of s that admit f's pods, or nil when every node does.
func admitting(s *cluster.Snapshot, memo map[any]any, f *form) []string {
	if len(f.pod.Spec.NodeSelector) == 0 && !hasRequiredNodeAffinity(f) && !anyHardTaint(s, memo) {
		return nil // nothing to tell the nodes apart by
	}
	if v, ok := memo[admitKey{f.key}]; ok {
		return v.([]string)
	}
	sh := &shape{form: f}
	var nodes []string
	for _, n := range s.Nodes() {
		if _, failed := staticReason(n, sh, ignoreHealth); !failed {
			nodes = append(nodes, n.Name())
		}
	}
	if len(nodes) == len(s.Nodes()) {
		nodes = nil
	} else if nodes == nil {
		nodes = []string{} // none: not the nil that stands for every node
	}
	memo[admitKey{f.key}] = nodes
	return nodes
}

// hasRequiredNodeAffinity reports whether f's pods carry a required node affinity.
func hasRequiredNodeAffinity(f *form) bool {
	a := f.pod.Spec.Affinity
	return a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
}

// anyHardTaint reports whether some node of s has a taint that forbids scheduling.
func anyHardTaint(s *cluster.Snapshot, memo map[any]any) bool {
	if v, ok := memo[taintedKey{}]; ok {
		return v.(bool)
	}
	tainted := false
	for _, n := range s.Nodes() {
		for i := range n.Node.Spec.Taints {
			tainted = tainted || hardTaint(&n.Node.Spec.Taints[i])
		}
	}
	memo[taintedKey{}] = tainted
	return tainted
}

// memberKey is the key formsOf files m under.
func memberKey(m Member) string {
	if m.Key != "" {
		return m.Key
	}
	return shapeKey(m.Pod, m.requests())
}

// MembersApart returns, for each member of g, a class such that no two members of one
// nonzero class may share a node, or nil when no member is held apart: the members of a
// shape whose pods' required pod anti-affinity over kubernetes.io/hostname selects
// their own labels in their own namespace, or whose pods ask for a host port, are one
// class. Rules between members of different shapes, and terms whose namespaces are
// chosen by a selector, are left to the placement. The forecast plans a class's members
// on different nodes.
func MembersApart(g Group) []int {
	class := map[string]int{} // by shape key; numbered as the members come
	for _, f := range shapeSetOf(g).forms {
		if selfAntiAffine(f.pod) || asksHostPort(f.pod) {
			class[f.key] = 0
		}
	}
	if len(class) == 0 {
		return nil
	}
	out, next := make([]int, len(g.Members)), 0
	for i, m := range g.Members {
		key := memberKey(m)
		c, apart := class[key]
		if !apart {
			continue
		}
		if c == 0 {
			next++
			c, class[key] = next, next
		}
		out[i] = c
	}
	return out
}

// selfAntiAffine reports whether p's required pod anti-affinity keeps pods with its own
// labels in its own namespace off its node.
func selfAntiAffine(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil || term.NamespaceSelector != nil ||
			len(term.MismatchLabelKeys) > 0 || len(term.Namespaces) > 0 && !slices.Contains(term.Namespaces, p.Namespace) {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector); err == nil && sel.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}

// asksHostPort reports whether a container of p asks for a host port.
func asksHostPort(p *corev1.Pod) bool {
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					return true
				}
			}
		}
	}
	return false
}

// TopologyDomains returns the names of s's nodes grouped by their value of g's required
// topology key (Topology.Required), one sorted list per value, the values in order;
// only the pinned value's (Topology.Domain) when members already running chose it.
// When the members' own required pod affinity keeps them within one value of another
// key, and Place chooses that value (see affinityKey), the lists are split by it too,
// or made by it alone without a required key. It returns nil when neither applies, and
// an empty list when no node has the keys. The forecast plans all of g's members within
// one of them, as Place does.
func TopologyDomains(s *cluster.Snapshot, g Group) [][]string {
	required, affinity := domainKeys(s, g)
	if required == "" && affinity == "" {
		return nil
	}
	out := [][]string{}
	for _, c := range domainChoicesOf(s.Nodes(), required, g.Topology.Domain, affinity) {
		names := make([]string, 0, len(c.nodes))
		for _, n := range c.nodes {
			names = append(names, n.Name())
		}
		slices.Sort(names)
		out = append(out, names)
	}
	return out
}
