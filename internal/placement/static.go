package placement

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

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
// nonzero class may share a node of s, or nil when no member is held apart. A class is
// the members that carry one rule selecting them all in their own namespace, whatever
// their shapes (a PyTorchJob's master and workers whose rule selects the job's name are
// one class):
//   - required pod anti-affinity over kubernetes.io/hostname;
//   - a topology spread constraint over kubernetes.io/hostname with maxSkew 1 and
//     DoNotSchedule, while the nodes it counts (labelled with its keys, and admitted by
//     the pod's node affinity and taints as its inclusion policies say) are at least as
//     many as the class's members, or fewer than its minDomains: until each of those
//     nodes holds one of them, no node may hold two;
//   - a host port (the members of one shape).
//
// Rules between members that carry different ones, terms whose namespaces are chosen
// by a selector, spread by more than one per node, and the pods running that a rule
// selects are left to the placement. The forecast plans a class's members on different
// nodes.
func MembersApart(s *cluster.Snapshot, g Group) []int {
	forms := shapeSetOf(g).forms
	type spreadShape struct {
		f *form
		c *corev1.TopologySpreadConstraint
	}
	rules := map[string]string{}          // by shape key: the rule that holds its members apart
	members := map[string]int{}           // by rule: how many members carry it
	spreads := map[string][]spreadShape{} // by rule, when it is a spread: its shapes
	for _, f := range forms {
		rule, spread := apartRule(f)
		if rule == "" {
			continue
		}
		rules[f.key] = rule
		members[rule] += len(f.members)
		if spread != nil {
			spreads[rule] = append(spreads[rule], spreadShape{f, spread})
		}
	}
	for rule, shapes := range spreads {
		for _, sh := range shapes {
			if n := spreadDomains(s, sh.f, sh.c); n < members[rule] && (sh.c.MinDomains == nil || n >= int(*sh.c.MinDomains)) {
				// Once each node counted holds one, a node may hold two.
				for _, sh := range shapes {
					delete(rules, sh.f.key)
				}
				break
			}
		}
	}
	if len(rules) == 0 {
		return nil
	}
	class := map[string]int{} // by rule; numbered as the members come
	out := make([]int, len(g.Members))
	for i, m := range g.Members {
		rule, apart := rules[memberKey(m)]
		if !apart {
			continue
		}
		if class[rule] == 0 {
			class[rule] = len(class) + 1
		}
		out[i] = class[rule]
	}
	return out
}

// apartRule renders the rule that keeps f's members one per node (see MembersApart),
// with the spread constraint when it is one; "" when none does.
func apartRule(f *form) (string, *corev1.TopologySpreadConstraint) {
	p := f.pod
	if term := selfAntiAffine(p); term != nil {
		return "anti|" + p.Namespace + "|" + term.String() + ownValues(p, term.MatchLabelKeys), nil
	}
	if c := selfSpreadOnePerNode(p); c != nil {
		return "spread|" + p.Namespace + "|" + c.String() + ownValues(p, c.MatchLabelKeys), c
	}
	if asksHostPort(p) {
		return "port|" + f.key, nil
	}
	return "", nil
}

// ownValues renders p's values of keys: a term's or constraint's matchLabelKeys narrow
// its selector to them (upstream merges them into it), so members with other values do
// not count for each other.
func ownValues(p *corev1.Pod, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("|" + k + "=" + p.Labels[k])
	}
	return b.String()
}

// selfSpreadOnePerNode returns p's topology spread constraint over the hostname with
// maxSkew 1 and DoNotSchedule whose selector selects p's labels, or nil.
func selfSpreadOnePerNode(p *corev1.Pod) *corev1.TopologySpreadConstraint {
	for i, c := range p.Spec.TopologySpreadConstraints {
		if c.TopologyKey != corev1.LabelHostname || c.MaxSkew != 1 || c.WhenUnsatisfiable != corev1.DoNotSchedule || c.LabelSelector == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err == nil && sel.Matches(labels.Set(p.Labels)) {
			return &p.Spec.TopologySpreadConstraints[i]
		}
	}
	return nil
}

// spreadDomains counts the nodes of s that PodTopologySpread counts as domains of c for
// f's pods: labelled with the keys of all the pods' hard constraints, admitted by their
// node affinity and selector unless c's nodeAffinityPolicy is Ignore, and tolerated
// when its nodeTaintsPolicy is Honor. Readiness and cordon do not matter: kube-scheduler
// counts every node it knows.
func spreadDomains(s *cluster.Snapshot, f *form, c *corev1.TopologySpreadConstraint) int {
	honorAffinity := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	n := 0
next:
	for _, ni := range s.Nodes() {
		node := ni.Node
		for _, hard := range f.pod.Spec.TopologySpreadConstraints {
			if _, ok := node.Labels[hard.TopologyKey]; !ok && hard.WhenUnsatisfiable == corev1.DoNotSchedule {
				continue next
			}
		}
		if ok, err := f.affinity.Match(node); honorAffinity && (err != nil || !ok) {
			continue
		}
		if honorTaints {
			if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints,
				f.pod.Spec.Tolerations, hardTaint, true); untolerated {
				continue
			}
		}
		n++
	}
	return n
}

// selfAntiAffine returns p's required pod anti-affinity term that keeps pods with its own
// labels in its own namespace off its node, or nil.
func selfAntiAffine(p *corev1.Pod) *corev1.PodAffinityTerm {
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return nil
	}
	for i, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil || term.NamespaceSelector != nil ||
			len(term.MismatchLabelKeys) > 0 || len(term.Namespaces) > 0 && !slices.Contains(term.Namespaces, p.Namespace) {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector); err == nil && sel.Matches(labels.Set(p.Labels)) {
			return &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
		}
	}
	return nil
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
