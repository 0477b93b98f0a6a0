package placement

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
)

// FilterRejected is a node rejected by one of kube-scheduler's own Filter plugins, hosted
// in placement (internal/kubefit): Plugin names it, Detail is its message.
const FilterRejected ReasonKind = "FilterRejected"

// needsFilters reports whether a pod asks for something only kube-scheduler's hosted
// plugins judge: pod (anti-)affinity, hard topology spread, host ports, volumes backed
// by claims or by cloud disks, or DRA devices. Other pods are judged by placement's own
// predicates, which give the same verdicts as the plugins for what such a pod asks
// (readiness, cordon, node affinity and selector, taints, resources; kubefit's
// differential test holds them to it) at no cost per node.
func needsFilters(p *corev1.Pod) bool {
	spec := &p.Spec
	if len(spec.ResourceClaims) > 0 {
		return true
	}
	if a := spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return true
	}
	for _, c := range spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	for _, v := range spec.Volumes {
		if !localVolume(v.VolumeSource) {
			return true
		}
	}
	return asksHostPort(p)
}

// localVolume reports whether a volume is node-local and unlimited: no claim, no disk
// attached to the node, nothing a volume filter reads.
func localVolume(v corev1.VolumeSource) bool {
	return v.EmptyDir != nil || v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil ||
		v.Projected != nil || v.HostPath != nil || v.Image != nil
}

// filterKey renders what the hosted filters read of a pod beyond shapeKey's fields, so
// that members that differ in it are separate shapes: namespace, labels, pod
// (anti-)affinity, topology spread, host ports and volumes. It is "" for a pod that
// needs no filters.
func filterKey(p *corev1.Pod, signature bool) string {
	if !needsFilters(p) {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "|ns=%s|labels=", p.Namespace)
	keys := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s,", k, p.Labels[k])
	}
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			b.WriteString("|podaff:" + a.PodAffinity.String())
		}
		if a.PodAntiAffinity != nil {
			b.WriteString("|podanti:" + a.PodAntiAffinity.String())
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		b.WriteString("|spread:" + c.String())
	}
	for _, v := range p.Spec.Volumes {
		b.WriteString("|vol:" + v.String())
		if v.Ephemeral != nil {
			// A generic ephemeral volume's claim is named after its pod: each such member
			// is a shape of its own.
			b.WriteString("|pod=" + p.Name)
		}
	}
	if len(p.Spec.ResourceClaims) > 0 {
		b.WriteString(devicesKey(p, signature))
	}
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					fmt.Fprintf(&b, "|port:%s:%d/%s", port.HostIP, port.HostPort, port.Protocol)
				}
			}
		}
	}
	return b.String()
}

// begin starts shape s's cycle of the hosted filters on the placer's snapshot as it is
// now, when s needs them: its own constraints, or a pod counted on a node whose required
// anti-affinity may reject it, or plugin arguments that add rules to every pod. It
// returns nil for a shape placement's own predicates judge.
func (p *placer) begin(s *shape) *kubefit.Cycle {
	h, err := kubefit.HostOf(p.snap)
	if err == nil && !s.filters && s.dra == nil && !p.snap.HasRequiredAntiAffinity() && !h.Always() {
		return nil
	}
	if p.cycles == nil {
		p.cycles = map[*shape]*kubefit.Cycle{}
	}
	var c *kubefit.Cycle
	if err == nil {
		c, err = h.Begin(p.snap, s.pod)
	}
	if err != nil {
		// The plugins could not be run: no node is eligible, and the diagnosis says why.
		p.filterErr = err.Error()
		c = nil
	}
	p.cycles[s] = c
	return c
}

// filterReason applies s's cycle, if it has one, to n: its first reason.
func (p *placer) filterReason(n *cluster.NodeInfo, s *shape) (NodeReason, bool) {
	if rs := p.filterReasons(n, s); len(rs) > 0 {
		return rs[0], true
	}
	return NodeReason{}, false
}

// member returns the member of s that the next assumption places: the first one not
// placed yet in the attempt (fillEach places a shape's members in order).
func (p *placer) member(s *shape) *corev1.Pod {
	if i := p.next[s]; i < len(s.members) && s.members[i].Pod != nil {
		return s.members[i].Pod
	}
	return s.pod
}

// filterReasons is every reason s's cycle, if it has one, rejects n for: the rejecting
// plugin's messages, or why the member's claims cannot be satisfied on n.
func (p *placer) filterReasons(n *cluster.NodeInfo, s *shape) []NodeReason {
	c, ok := p.cycles[s]
	if !ok {
		return nil
	}
	if c == nil {
		return []NodeReason{{Kind: FilterRejected, Plugin: "muster", Detail: "kube-scheduler's filters failed: " + p.filterErr}}
	}
	v := c.Filter(n)
	if v.OK() || v.Plugin == names.NodeResourcesFit {
		// Resources are judged by placement's own count (fits), which says how many
		// members a node takes and names each resource short, in the same words.
		if s.claims {
			if _, err := c.Volumes(p.member(s), n); err != nil {
				return []NodeReason{{Kind: FilterRejected, Plugin: names.VolumeBinding, Detail: err.Error()}}
			}
		}
		return nil
	}
	if v.Plugin == names.DynamicResources {
		return p.deviceReasons(s, v)
	}
	out := make([]NodeReason, 0, len(v.Reasons))
	for _, r := range v.Reasons {
		out = append(out, NodeReason{Kind: FilterRejected, Plugin: v.Plugin, Detail: r})
	}
	return out
}

// deviceReasons is DynamicResources' verdict for s's member in words that name its
// claims: a claim not made yet (the group waits for the resourceclaim controller), or
// the plugin's reason with what the claims ask for.
func (p *placer) deviceReasons(s *shape, v kubefit.Verdict) []NodeReason {
	pod := p.member(s)
	if _, missing := kubefit.ClaimsOf(p.snap, pod); len(missing) > 0 {
		return []NodeReason{{Kind: FilterRejected, Plugin: v.Plugin,
			Detail: fmt.Sprintf("%s: spec.resourceClaims %s", deviceClaimPending, strings.Join(missing, ", "))}}
	}
	needs := kubefit.ClaimNeeds(p.snap, pod)
	out := make([]NodeReason, 0, len(v.Reasons))
	for _, r := range v.Reasons {
		if needs != "" {
			r += " (" + needs + ")"
		}
		out = append(out, NodeReason{Kind: FilterRejected, Plugin: v.Plugin, Detail: r})
	}
	return out
}

// deviceClaimPending begins the reason for a member whose ResourceClaims do not all exist
// yet: a template's claim the resourceclaim controller has not made, or a named claim not
// created. The group waits for them, as kube-scheduler retries such a pod.
const deviceClaimPending = "waiting for the member's ResourceClaims to be created"

// reserve allocates the DRA claims of member pod on n, which its cycle c passed, and
// assumes them on the snapshot for the members after it. A failure (the plugin's
// allocation differs from its Filter's, which does not happen on one snapshot) leaves
// the member unplaced and fails the filters for the rest of the attempt, with the
// reason in the diagnosis.
func (p *placer) reserve(c *kubefit.Cycle, pod *corev1.Pod, n *cluster.NodeInfo) ([]kubefit.ClaimAllocation, func(), bool) {
	claims, err := c.Reserve(pod, n)
	if err == nil {
		var undo func()
		if undo, err = kubefit.Assume(p.snap, pod, claims); err == nil {
			return claims, undo, true
		}
	}
	p.filterErr = err.Error()
	for s, sc := range p.cycles {
		if sc == c {
			p.cycles[s] = nil
		}
	}
	return nil, nil, false
}

// devicesKey renders a pod's DRA claims for filterKey. For a shape, each member is its
// own: its claims are its own (a template's), or shared with members placed before it,
// which changes what the plugin allows it. For a signature, a claim is rendered by what
// it is made from: members of two gangs whose claims come from one template, made or
// not made yet alike, get one verdict on one snapshot; a named claim is itself.
func devicesKey(p *corev1.Pod, signature bool) string {
	if !signature {
		return "|devices:pod=" + p.Name
	}
	var b strings.Builder
	for _, pc := range p.Spec.ResourceClaims {
		switch {
		case pc.ResourceClaimName != nil:
			fmt.Fprintf(&b, "|claim:%s=%s", pc.Name, *pc.ResourceClaimName)
		case pc.ResourceClaimTemplateName != nil:
			made := slices.ContainsFunc(p.Status.ResourceClaimStatuses, func(s corev1.PodResourceClaimStatus) bool {
				return s.Name == pc.Name && s.ResourceClaimName != nil
			})
			fmt.Fprintf(&b, "|template:%s=%s,made=%v", pc.Name, *pc.ResourceClaimTemplateName, made)
		}
	}
	return b.String()
}

// markDRA marks the shapes' resources that DeviceClasses of the snapshot provide
// through DRA (see shape.dra), and reports whether any shape has one. Such a resource is
// never the one placement packs on: nodes that have none of it in their allocatable
// take it as devices.
func (p *placer) markDRA() bool {
	if len(p.snap.Objects().DeviceClasses) == 0 {
		return false
	}
	h, err := kubefit.HostOf(p.snap)
	if err != nil {
		return false // the filters fail too, and the diagnosis says why
	}
	marked := false
	for _, s := range p.shapes {
		classes, err := h.ExtendedClasses(p.snap, s.req)
		if err != nil {
			continue
		}
		if s.markDRA(classes) {
			marked = true
			if _, ok := classes[p.scarce]; ok {
				p.scarce = corev1.ResourceCPU
			}
		}
	}
	return marked
}
