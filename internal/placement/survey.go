package placement

import (
	"slices"

	"github.com/muster-sched/muster/internal/cluster"
)

// A queue that waits for room has its groups placed, and their failures diagnosed, on
// every pass, with a survey of every node for each shape; between two passes only the
// nodes a pod started or ended on change. A survey of every node is therefore kept with
// the snapshot, per shape, and made again only on the nodes whose generation changed.

// maxSurveys bounds the surveys a snapshot keeps: beyond it, they are dropped together
// and made again as the shapes come back.
const maxSurveys = 1024

// surveyed is what a survey found of one node: its room for members of the shape, or
// the reasons it has none, at the node's generation.
type surveyed struct {
	node       *cluster.NodeInfo
	generation uint64
	room       int
	reasons    tally
}

// surveyKey names a survey in the snapshot's memo: the shape's key, and the group's
// required topology key and pinned domain, which surveyNode reads.
type surveyKey struct{ shape, required, domain string }

// surveyMemo is a survey of every node of a snapshot for one shape and topology, with
// the sums survey reports.
type surveyMemo struct {
	nodes           []surveyed // as the snapshot's nodes
	counts          tally
	available, room int
	// requests and reasons are the shape's requests and counts as a ShapeDiagnosis
	// reports them, shared by the diagnoses made from the memo; reasons is sorted again
	// (into sorting) only when stale, after a node's findings changed, and replaced when
	// that changed it.
	requests cluster.Resources
	reasons  []ReasonCount
	stale    bool
	sorting  tally
}

// surveyAll is survey over every node of the snapshot, from the snapshot's memo when s
// is judged by what a node's generation covers: its object and its resources, and the
// group's held capacity, which hold assumes on its nodes and reverts, changing their
// generation both times. A shape the hosted filters judge reads other nodes' pods too,
// and an exclusion is the caller's function: those are surveyed in full.
func (p *placer) surveyAll(s *shape) ShapeDiagnosis {
	nodes := p.snap.Nodes()
	if _, filtered := p.cycles[s]; filtered || p.opts.Exclude != nil || p.health != checkHealth {
		return p.survey(s, nodes)
	}
	memos := p.snap.Surveys()
	key := surveyKey{shape: s.key, required: p.g.Topology.Required, domain: p.g.Topology.Domain}
	m, _ := memos[key].(*surveyMemo)
	if m == nil || len(m.nodes) != len(nodes) {
		if len(memos) >= maxSurveys {
			clear(memos)
		}
		m = &surveyMemo{nodes: make([]surveyed, len(nodes)), requests: withoutPods(s.req), stale: true}
		memos[key] = m
	}
	m.update(p, s, nodes)
	if m.stale {
		m.resort()
	}
	return ShapeDiagnosis{Shape: s.name(), Members: len(s.members), Requests: m.requests, Nodes: len(nodes),
		Available: m.available, Room: min(m.room, len(s.members)), Reasons: m.reasons}
}

// update surveys again the nodes that changed since m last saw them.
func (m *surveyMemo) update(p *placer, s *shape, nodes []*cluster.NodeInfo) {
	for i, n := range nodes {
		e := &m.nodes[i]
		if e.node == n && e.generation == n.Generation() {
			continue
		}
		if e.node != nil {
			m.count(e, -1)
		}
		e.node, e.generation, e.reasons = n, n.Generation(), e.reasons[:0]
		e.room = p.surveyNode(&e.reasons, n, s)
		m.count(e, 1)
		m.stale = true
	}
}

// resort sorts m's counts again, and replaces m.reasons when they differ: often a node
// that changed fits no more members than before, for the same reasons.
func (m *surveyMemo) resort() {
	m.sorting = append(m.sorting[:0], m.counts...)
	m.sorting.sort()
	if m.reasons == nil || !slices.Equal(m.reasons, m.sorting) {
		m.reasons = m.sorting.sorted()
	}
	m.stale = false
}

// count adds sign times e's findings to m's sums.
func (m *surveyMemo) count(e *surveyed, sign int) {
	if e.room > 0 {
		m.available += sign
		m.room += sign * e.room
		return
	}
	for _, c := range e.reasons {
		m.counts.addN(c.NodeReason, sign*c.Nodes)
	}
}
