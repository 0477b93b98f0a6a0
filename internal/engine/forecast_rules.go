package engine

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/forecast"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/placement"
)

// memberRules are what the forecast reads of a queued group's members besides their
// requests: the nodes that admit each (placement.NodesAdmitting, narrowed by its claims,
// withClaimNodes), the classes kept apart (placement.MembersApart) and the topology
// domains they must share one of (placement.TopologyDomains), nil when none;
// found for the queue entry's members (the first of them) on a snapshot's nodes (its
// layout) and devices (the census's generation), and, for members with claims of
// devices or volumes, its objects (their generation).
type memberRules struct {
	first      *placement.Member
	snap       *cluster.Snapshot
	layout     uint64
	devicesGen uint64
	claims     bool
	objGen     uint64
	nodes      [][]string
	apart      []int
	// domains are the node sets of the values of the group's required topology key
	// (placement.TopologyDomains), nil when it requires none.
	domains [][]string
	// affine is set when a member asks for pod affinity: its nodes and domains depend on
	// the pods running, and are found again when the engine's snapshot version moved
	// past podsAt.
	affine bool
	podsAt uint64
	// blocks are the nodes each member may not use while running pods do, by pod
	// anti-affinity either way (placement.AntiAffinityBlocks, from forecastState.anti),
	// nil when none; read at snapshot version blocksAt, and again once it moved if the
	// members have required anti-affinity (antiAffine), something was blocked, or some
	// pod on the snapshot has required anti-affinity now.
	blocks     [][]placement.NodeBlock
	blocksRead bool
	blocksAt   uint64
	antiAffine bool
}

// rulesOf returns the member rules of queued group g, found again only when the
// group's queue entry, a node, a device or, for a group with claims, an object changed;
// for a group whose members ask for pod affinity, also when a pod did (the pods it
// selects decide where the members may go).
func (e *Engine) rulesOf(g *group) *memberRules {
	r := &g.rules
	pg, ok := e.queue.Placement(g.key)
	if !ok || len(pg.Members) == 0 {
		*r = memberRules{}
		return r
	}
	objs := e.snap.Objects()
	census := e.forecast.devices.count(objs)
	if r.first != &pg.Members[0] || r.snap != e.snap || r.layout != e.snap.Layout() ||
		r.devicesGen != census.devicesGen || r.claims && r.objGen != objs.Generation() ||
		r.affine && r.podsAt != e.snapVersion {
		*r = memberRules{first: &pg.Members[0], snap: e.snap, layout: e.snap.Layout(),
			devicesGen: census.devicesGen, objGen: objs.Generation(),
			claims: slices.ContainsFunc(pg.Members, func(m placement.Member) bool {
				return kubefit.HasResourceClaims(m.Pod) || kubefit.HasClaims(m.Pod)
			}),
			affine: slices.ContainsFunc(pg.Members, func(m placement.Member) bool { return asksPodAffinity(m.Pod) }),
			podsAt: e.snapVersion,
			nodes:  placement.NodesAdmitting(e.snap, pg), apart: placement.MembersApart(e.snap, pg),
			domains: placement.TopologyDomains(e.snap, pg)}
		if r.claims {
			r.nodes = withClaimNodes(r.nodes, e.snap, pg, census.requestNodes(), e.forecast.volumes.memoFor(e.snap))
		}
		if r.affine {
			r.nodes = narrowEach(r.nodes, placement.AffinityNodes(e.snap, pg))
		}
		r.antiAffine = slices.ContainsFunc(pg.Members, func(m placement.Member) bool { return cluster.RequiresAntiAffinity(m.Pod) })
	}
	if !r.blocksRead || r.blocksAt != e.snapVersion && (r.antiAffine || r.blocks != nil || e.snap.HasRequiredAntiAffinity()) {
		r.blocks, r.blocksRead, r.blocksAt = nil, true, e.snapVersion
		if r.antiAffine || e.snap.HasRequiredAntiAffinity() { // else nothing can block (most clusters)
			r.blocks = e.forecast.anti.of(e.snap, e.snapVersion).Blocks(pg)
		}
	}
	return r
}

// fromOf returns, for each of g's first n members that running pods keep off some nodes
// (memberRules.blocks), each such node with the time from which it may use it: the
// latest expected end of those pods, as the forecast's releases read it (releaseOf),
// or never for a pod with no expected end, one of g's own, or one that is not a member
// of a group. It returns nil when no member is blocked. Members that share their blocks
// share their list, and so do the groups of one forecast that share their blocks
// (forecastState.fromMemo) while none of their members runs: a pod that blocks such a
// group is none of its own.
func (e *Engine) fromOf(g *group, blocks [][]placement.NodeBlock, n int, now time.Time) [][]forecast.NodeFrom {
	if blocks == nil {
		return nil
	}
	shared := !e.runs(g)
	out := make([][]forecast.NodeFrom, n)
	var lastPods []string
	var lastAt time.Time
	for i, list := range blocks[:n] {
		if i > 0 && sameBlocks(list, blocks[i-1]) {
			out[i] = out[i-1]
			continue
		}
		if len(list) == 0 {
			continue
		}
		if from, ok := e.forecast.fromMemo[&list[0]]; ok && shared {
			out[i] = from // a list groups repelled alike share (placement.RunningAntiAffinity.Blocks)
			continue
		}
		from := make([]forecast.NodeFrom, 0, len(list))
		for _, b := range list {
			if !sameList(b.Pods, lastPods) {
				lastPods, lastAt = b.Pods, e.blockedUntil(g, b.Pods, now)
			}
			from = append(from, forecast.NodeFrom{Node: b.Node, At: lastAt})
		}
		if shared {
			if e.forecast.fromMemo == nil {
				e.forecast.fromMemo = map[*placement.NodeBlock][]forecast.NodeFrom{}
			}
			e.forecast.fromMemo[&list[0]] = from
		}
		out[i] = from
	}
	return out
}

// runs reports whether a member of g is counted on a node.
func (e *Engine) runs(g *group) bool {
	for key := range g.members {
		if e.snap.Bound(key) {
			return true
		}
	}
	return false
}

// blockedUntil is when the last of pods, the keys of pods on the nodes, is expected to
// end, as the forecast's releases read it; zero for never: one of them has no expected
// end, is a member of self, or is no member of a group.
func (e *Engine) blockedUntil(self *group, pods []string, now time.Time) time.Time {
	var last time.Time
	for _, key := range pods {
		g := e.groups[e.podGroup[key]]
		if g == nil || g == self {
			return time.Time{}
		}
		p := g.members[key]
		if p == nil {
			return time.Time{}
		}
		// Held as releaseOf holds a release.
		r := e.readGroup(g, now)
		if terminal(p) || !r.live || !r.end.known {
			return time.Time{}
		}
		if r.end.at.After(last) {
			last = r.end.at
		}
	}
	return last
}

// runningAnti is the forecast's read of the pods with required anti-affinity on a
// snapshot (placement.RunningAntiAffinity), which every queued group's blocks are found
// from, kept while the snapshot and its version stay the same.
type runningAnti struct {
	snap    *cluster.Snapshot
	version uint64
	read    *placement.RunningAntiAffinity
}

// of returns the read of snap at version, read again when either changed.
func (a *runningAnti) of(snap *cluster.Snapshot, version uint64) *placement.RunningAntiAffinity {
	if a.read == nil || a.snap != snap || a.version != version {
		*a = runningAnti{snap: snap, version: version, read: placement.NewRunningAntiAffinity(snap)}
	}
	return a.read
}

// sameBlocks reports whether a and b are the same list, as members alike share theirs.
func sameBlocks(a, b []placement.NodeBlock) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// asksPodAffinity reports whether p has required pod affinity terms: whether the pods
// running decide where it may go (see placement.AffinityNodes, TopologyDomains).
func asksPodAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// narrowEach narrows nodes, the nodes each member may use (nil for all), to by's
// sorted list for the member, where by has one. Members that had the same list and are
// narrowed by the same one share the narrowed list, as in withClaimNodes.
func narrowEach(nodes, by [][]string) [][]string {
	if by == nil {
		return nodes
	}
	if nodes == nil {
		nodes = make([][]string, len(by))
	}
	var lastIn, lastAllowed, lastOut []string
	for i, allowed := range by {
		in := nodes[i]
		switch {
		case allowed == nil:
		case lastOut != nil && sameList(in, lastIn) && sameList(allowed, lastAllowed):
			nodes[i] = lastOut
		default:
			nodes[i] = allowed
			if in != nil {
				nodes[i] = kubefit.Narrow(in, allowed)
			}
			lastIn, lastAllowed, lastOut = in, allowed, nodes[i]
		}
	}
	return nodes
}

// withClaimNodes narrows nodes, the nodes that admit each member of pg (nil for all),
// to those whose devices can serve the member's claims (kubefit.DeviceNodes) and where
// its claims may get their volumes (kubefit.VolumeNodes). Members
// that admitted the same nodes and whose claims allow the same ones share the narrowed
// list, as the forecast reads a list shared with the member before once.
func withClaimNodes(nodes [][]string, snap *cluster.Snapshot, pg placement.Group, devices map[string][]string,
	volumes *kubefit.VolumeMemo) [][]string {
	var lastIn, lastAllowed, lastOut []string
	for i, m := range pg.Members {
		allowed := kubefit.DeviceNodes(snap, m.Pod, devices)
		switch vol := kubefit.VolumeNodes(snap, m.Pod, volumes); {
		case vol == nil:
		case allowed == nil:
			allowed = vol
		default:
			allowed = kubefit.Narrow(allowed, vol)
		}
		if allowed == nil {
			continue
		}
		if nodes == nil {
			nodes = make([][]string, len(pg.Members))
		}
		in := nodes[i]
		switch {
		case in == nil:
			nodes[i] = allowed
		case lastOut != nil && sameList(in, lastIn) && sameList(allowed, lastAllowed):
			nodes[i] = lastOut
		default:
			nodes[i] = kubefit.Narrow(in, allowed)
			lastIn, lastAllowed, lastOut = in, allowed, nodes[i]
		}
	}
	return nodes
}

// volumeNodes is the forecast's memo of the nodes each persistent volume and storage
// class may be used on (kubefit.VolumeNodes), for one layout of a snapshot's nodes.
type volumeNodes struct {
	snap   *cluster.Snapshot
	layout uint64
	memo   *kubefit.VolumeMemo
}

// memoFor returns the memo for snap's nodes, made anew when they changed or it reached
// maxRequestNodes volumes and classes (the lists found stay valid for those who hold
// them).
func (v *volumeNodes) memoFor(snap *cluster.Snapshot) *kubefit.VolumeMemo {
	if v.memo == nil || v.snap != snap || v.layout != snap.Layout() || v.memo.Len() >= maxRequestNodes {
		*v = volumeNodes{snap: snap, layout: snap.Layout(), memo: kubefit.NewVolumeMemo()}
	}
	return v.memo
}

// sameList reports whether a and b are the same list: the same array, or both empty.
func sameList(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// firstOf returns the first n of s, or nil if s is nil.
func firstOf[T any](s []T, n int) []T {
	if s == nil {
		return nil
	}
	return s[:n]
}
