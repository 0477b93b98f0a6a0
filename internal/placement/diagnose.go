package placement

import (
	"strconv"
	"strings"

	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"

	"github.com/muster-sched/muster/internal/cluster"
)

// diagnose explains a failed placement. The snapshot is as it was before the attempt.
func (p *placer) diagnose() *Diagnosis {
	d := &Diagnosis{
		Code:      Unschedulable,
		Group:     p.g.Name,
		MinMember: p.g.MinMember,
		Members:   len(p.g.Members),
		Placed:    p.best,
		Topology:  p.topology,
		Shapes:    make([]ShapeDiagnosis, 0, len(p.shapes)),
		Task:      p.task,
	}
	for _, s := range p.shapes {
		p.begin(s)
		d.Shapes = append(d.Shapes, p.surveyAll(s))
		p.cycles = nil
	}
	d.Blocked = p.blocked.ifFiltered()
	if room, empty, ok := p.fitsEmpty(); !ok && !empty.transient() {
		d.Code = Impossible
		d.EmptyRoom = room
		d.Blocked = empty.ifFiltered()
		d.Task = p.emptyTask
		for i, s := range p.shapes {
			d.Shapes[i].Shortfall = p.shortfall(s)
		}
	}
	return d
}

// noteBlocked records, for the attempt that placed the most members so far, why the next
// member of s fits none of the tiers' nodes with the attempt's members assumed.
func (p *placer) noteBlocked(a *attempt, s *shape, tiers [][]*cluster.NodeInfo) {
	if p.stopped && p.mostPlaced >= len(a.assignments) {
		return
	}
	p.stopped, p.mostPlaced, p.blocked = true, len(a.assignments), nil
	if _, ok := p.cycles[s]; !ok {
		// No hosted filter judges s, so its survey would hold no reason of theirs and
		// the diagnosis would drop it (ifFiltered): it is not made.
		return
	}
	var nodes []*cluster.NodeInfo
	for _, t := range tiers {
		nodes = append(nodes, t...)
	}
	p.blocked = &Blocked{Placed: len(a.assignments), Shape: p.survey(s, nodes)}
}

// survey counts, over nodes, why each cannot take one member of s now.
func (p *placer) survey(s *shape, nodes []*cluster.NodeInfo) ShapeDiagnosis {
	sd := ShapeDiagnosis{Shape: s.name(), Members: len(s.members), Requests: withoutPods(s.req), Nodes: len(nodes)}
	var hist tally
	for _, n := range nodes {
		if k := p.surveyNode(&hist, n, s); k > 0 {
			sd.Available++
			sd.Room += k
		}
	}
	sd.Room = min(sd.Room, len(s.members))
	sd.Reasons = hist.sorted()
	return sd
}

// surveyNode is how many members of s node n can take now, and when none, counts why
// into t.
func (p *placer) surveyNode(t *tally, n *cluster.NodeInfo, s *shape) int {
	if key := p.g.Topology.Required; key != "" {
		v, ok := n.Node.Labels[key]
		if !ok {
			t.add(NodeReason{Kind: MissingTopologyLabel, Detail: key})
			return 0
		}
		if pinned := p.g.Topology.Domain; pinned != "" && v != pinned {
			t.add(NodeReason{Kind: OutsideDomain, Detail: key + "=" + pinned})
			return 0
		}
	}
	if r, bad := p.rejectStatic(n, s); bad {
		t.add(r)
		return 0
	}
	if rs := p.filterReasons(n, s); len(rs) > 0 {
		for _, r := range rs {
			t.add(r)
		}
		return 0
	}
	return roomOrReasons(t, n, s)
}

// fitsEmpty reports whether the group could be placed on the cluster with nothing bound,
// every node healthy and nothing reserved, and, when not, how many members it could take
// and where the best attempt stopped.
func (p *placer) fitsEmpty() (room int, blocked *Blocked, ok bool) {
	key, memo := p.emptyKey(), p.snap.EmptyFits()
	if n, ok := memo[key]; ok && key != "" {
		return n, nil, true
	}
	empty := &placer{
		snap:     p.snap.Empty(),
		g:        p.g,
		shapes:   p.shapes,
		health:   ignoreHealth,
		scarce:   p.scarce,
		scarceID: p.scarceID,
		cpuID:    p.cpuID,
		withPods: p.withPods,
		core:     p.core,
	}
	empty.g.Topology.Domain = ""
	if plan := empty.place(); plan != nil {
		// Undone: the filters' state (volumes assumed, claims) outlives the copy.
		plan.Revert()
		if key != "" {
			memo[key] = len(plan.Assignments)
		}
		return len(plan.Assignments), nil, true
	}
	p.emptyTask = empty.task
	return empty.best, empty.blocked, false
}

// emptyKey names what fitsEmpty reads of the group, for the snapshot's memo of groups
// that fit the empty cluster: Signature without the pinned domain (the empty placer
// drops it), made from the shape keys the placer has already rather than rendering
// every member again. It is "" for groups whose members mount volumes or claim devices,
// whose fit on the empty cluster also depends on the objects' state at the time (and
// whose shape keys, unlike Signature's, name pods).
func (p *placer) emptyKey() string {
	var b strings.Builder
	size := 64 + len(p.g.Topology.Required) + len(p.g.Topology.Preferred)
	for _, s := range p.shapes {
		size += len(s.key) + 8
	}
	b.Grow(size)
	for _, part := range []string{"min=", strconv.Itoa(p.g.MinMember), ";required=", p.g.Topology.Required, ";preferred=", p.g.Topology.Preferred} {
		b.WriteString(part)
	}
	for _, s := range p.shapes {
		if s.claims || s.devices {
			return ""
		}
		b.WriteByte(';')
		b.WriteString(strconv.Itoa(len(s.members)))
		if s.core > 0 {
			b.WriteString("(core ")
			b.WriteString(strconv.Itoa(s.core))
			b.WriteByte(')')
		}
		b.WriteByte('*')
		b.WriteString(s.key)
	}
	return b.String()
}

// shortfall finds, for a shape that fits no eligible node even when empty, the resource
// with the largest gap between need and the largest eligible node's allocatable amount.
func (p *placer) shortfall(s *shape) *Shortfall {
	largest := cluster.Resources{}
	eligible := 0
	for _, n := range p.snap.Nodes() {
		if _, bad := staticReason(n, s, ignoreHealth); bad {
			continue
		}
		eligible++
		for name := range s.req {
			largest[name] = max(largest[name], n.Allocatable[name])
		}
	}
	if eligible == 0 {
		return nil
	}
	var worst *Shortfall
	for _, name := range s.req.Names() {
		need := s.req[name]
		if largest[name] >= need || s.backedByDRA(name) {
			continue // a node without the resource provides it as devices (shape.dra)
		}
		if worst == nil || need-largest[name] > worst.Need-worst.Largest {
			worst = &Shortfall{Resource: name, Need: need, Largest: largest[name], Eligible: eligible}
		}
	}
	return worst
}

// withoutPods drops the implicit pod count from a request, for display.
func withoutPods(r cluster.Resources) cluster.Resources {
	out := r.Clone()
	delete(out, "pods")
	return out
}

// transient reports whether the empty cluster's attempt stopped only on claims still
// being made, bound or provisioned (kube-scheduler's "unbound immediate
// PersistentVolumeClaims", an ephemeral volume's claim not made yet), or on required
// pod affinity, which pods that run now or later satisfy and the empty cluster has
// none of: the group waits for them, as kube-scheduler retries such a pod, instead of
// being Impossible.
func (b *Blocked) transient() bool {
	if b == nil || len(b.Shape.Reasons) == 0 {
		return false
	}
	for _, r := range b.Shape.Reasons {
		if r.Kind != FilterRejected || (r.Detail != unboundImmediateClaims && !strings.HasPrefix(r.Detail, ephemeralClaimPending) &&
			!strings.HasPrefix(r.Detail, deviceClaimPending) && r.Detail != interpodaffinity.ErrReasonAffinityRulesNotMatch) {
			return false
		}
	}
	return true
}

// ephemeralClaimPending begins VolumeBinding's PreFilter message for a pod whose generic
// ephemeral volume's claim the ephemeral volume controller has not made yet.
const ephemeralClaimPending = "waiting for ephemeral volume controller to create the persistentvolumeclaim"

// unboundImmediateClaims is VolumeBinding's PreFilter message for a pod whose claims of an
// Immediate class are not bound yet.
const unboundImmediateClaims = "pod has unbound immediate PersistentVolumeClaims"
