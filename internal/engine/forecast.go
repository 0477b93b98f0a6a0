package engine

import (
	"iter"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/forecast"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/placement"
	"github.com/muster-sched/muster/internal/queue"
)

// Forecast bounds: how many queued groups are planned, how many times capacity is
// freed are tried per group, and how often the forecast is made again by default (see
// Config.ForecastEvery).
const (
	forecastDepth        = 256
	forecastTries        = 512
	DefaultForecastEvery = 10 * time.Second
)

// reservationEvery is how often the starving group's nodes are planned at most.
func (e *Engine) reservationEvery() time.Duration {
	if e.cfg.ReservationEvery > 0 {
		return e.cfg.ReservationEvery
	}
	return e.forecastEvery()
}

// forecastEvery is how often the queues are forecast at most.
func (e *Engine) forecastEvery() time.Duration {
	if e.cfg.ForecastEvery > 0 {
		return e.cfg.ForecastEvery
	}
	return DefaultForecastEvery
}

// forecastState is the last forecast of the queued groups' starts.
type forecastState struct {
	// at is when it was made; zero before the first.
	at time.Time
	// starts holds each queued group's predicted start, by key, as its status reports
	// it: a new forecast replaces a start only when it moved enough (movedStart).
	starts map[string]forecast.Start
	// spareStarts is the map of the forecast before, which the next fills.
	spareStarts map[string]forecast.Start
	// stale says the queue or the cluster changed since it was made.
	stale bool
	// nodes holds, by key, the nodes the latest forecast planned each group on: where a
	// starving group's reservation goes (PlannedNodes).
	nodes map[string][]string
	// pods holds what the forecasts read of each node's pods, kept while the node's
	// generation stays the same (see membersOn); pass counts the forecasts, to drop the
	// nodes one did not read, and reads the times a node's pods were read, to number
	// each reading (the forecast.Node's Gen).
	pods  map[*cluster.NodeInfo]*nodePods
	pass  uint64
	reads uint64
	// nodeReads counts the forecast's reads of the nodes. A group that may read
	// differently since the last one has changedFor nodeReads+1, and so has each node
	// whose members it had a member among (see noteChanged): those nodes read their
	// releases again, and read the group's members again when their pods change.
	nodeReads uint64
	// nodesBuf and releasesBuf are the inputs of the last forecast, whose backing
	// arrays the next reuses (forecast.Plan keeps neither).
	nodesBuf    []forecast.Node
	releasesBuf []forecast.Release
	// groupsBuf and membersBuf are the groups the last forecast planned, and their
	// members' requests, kept likewise; planner keeps the forecast's own memory.
	groupsBuf  []forecast.Group
	membersBuf []cluster.Resources
	planner    forecast.Planner
	// devices are the nodes' DRA devices as the last forecast counted them, and
	// volumes the nodes the persistent volumes of queued members may be used on.
	devices deviceCensus
	volumes volumeNodes
	// anti is what the forecast read of the running pods with required anti-affinity;
	// fromMemo the times from which the groups a forecast plans may use the nodes those
	// keep them off, by the blocks' list, for the groups that share it (fromOf).
	anti     runningAnti
	fromMemo map[*placement.NodeBlock][]forecast.NodeFrom
	// headAt is when the starving group's nodes were last planned (see refreshHead),
	// and headStale says the queue or the cluster changed since.
	headAt    time.Time
	headStale bool
	// planned holds the keys of the groups the latest plan, whole or of the head,
	// planned.
	planned map[string]bool
	// seq is Forecast's iterator over starts, made once by New.
	seq iter.Seq2[string, time.Time]
}

// nodePods is what a forecast read of a node's pods, at the node's generation gen; read
// numbers that reading among all nodes' (a node's generation alone does not tell two
// nodes of the same name apart, as a snapshot's copies are numbered afresh).
type nodePods struct {
	gen, pass, read uint64
	// changedFor is the nodeReads+1 of the last change of a group with a member among
	// members (see forecastState.noteChanged); dropped says the forecast forgot the
	// record (dropUnread), which the groups that list it then forget too.
	changedFor uint64
	dropped    bool
	members    []memberOn
	// spare is the array of the members read before, for the next reading.
	spare []memberOn
	// releases are the members' releases, in the same order, as the last forecast read
	// them; fresh says the members were read since, and the releases must be too.
	// moving indexes the releases whose time moves with the clock (endMoves), read again
	// at every forecast.
	releases []forecast.Release
	fresh    bool
	moving   []int
}

// memberOn is a member of a group on a node: its pod's key, its group, its member
// object and requests.
type memberOn struct {
	key      string
	group    *group
	pod      *corev1.Pod
	requests cluster.Resources
}

// groupRead is what a forecast reads of a group with members on the nodes: live says
// it is still the engine's group under its key and started; end is then when it is
// expected to give its capacity back.
type groupRead struct {
	live bool
	end  end
}

// refreshForecast plans the queued groups again when the last forecast is stale and at
// least forecastEvery old, and marks changed the groups whose expected start moved
// enough to be worth a status write (see movedStart).
func (e *Engine) refreshForecast(now time.Time, out *Output) {
	f := &e.forecast
	if !f.stale || (!f.at.IsZero() && now.Before(f.at.Add(e.forecastEvery()))) {
		e.refreshHead(now)
		return
	}
	planned := e.planQueue(now, nil)
	f.headAt, f.headStale = now, false
	starts := emptied(f.spareStarts)
	f.planned, f.nodes = emptied(f.planned), emptied(f.nodes)
	for _, s := range planned {
		key := s.Key
		f.planned[key] = true
		if len(s.Nodes) > 0 {
			f.nodes[key] = s.Nodes
		}
		if old, ok := f.starts[key]; ok && !movedStart(old, s, now) {
			s = old // what the group's status says stays until it moves enough
		} else {
			e.touch(out, key)
		}
		starts[key] = s
	}
	for key := range f.starts {
		if _, ok := starts[key]; !ok && e.groups[key] != nil {
			e.touch(out, key)
		}
	}
	f.at, f.starts, f.spareStarts, f.stale = now, starts, f.starts, false
}

// emptied returns m emptied, or a new map if it is nil: the forecast's maps are filled
// anew at every forecast, with about as many keys.
func emptied[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	clear(m)
	return m
}

// refreshHead plans again, when they are stale and at least reservationEvery old, the
// nodes of the starving group that holds the reservation: the groups ahead of it in
// order are planned too (conservative backfill plans each group on what those ahead of
// it left), but none behind it, which the whole forecast plans at its own pace.
func (e *Engine) refreshHead(now time.Time) {
	f := &e.forecast
	holder := e.queue.Starving()
	// A group that took the reservation since the last plan did not have its nodes
	// planned then: they are planned at once.
	covered := holder == "" || f.planned[holder]
	if !f.headStale || (covered && !f.headAt.IsZero() && now.Before(f.headAt.Add(e.reservationEvery()))) {
		return
	}
	thr, next := e.cfg.StarvationThreshold, now.Add(e.reservationEvery())
	if holder == "" && thr > 0 && (e.nextStarve.IsZero() || e.nextStarve.After(next)) {
		return // no group is starving, nor will be before the next plan is due
	}
	f.headAt, f.headStale = now, false
	// The reservation goes to the holder, or the first group in order that waited past
	// the threshold and does not fit: planned up to the later of the holder and the
	// first group that will have waited past it by the next plan.
	seenHolder := holder == ""
	last := func(ent *queue.Entry) bool {
		seenHolder = seenHolder || ent.Key == holder
		return seenHolder && !ent.QueuedAt.Add(thr).After(next)
	}
	if f.nodes == nil {
		f.nodes = map[string][]string{}
	}
	f.planned = emptied(f.planned)
	for _, s := range e.planQueue(now, last) {
		f.planned[s.Key] = true
		if len(s.Nodes) > 0 {
			f.nodes[s.Key] = s.Nodes
		} else {
			delete(f.nodes, s.Key)
		}
	}
}

// forecastWake is when the next forecast is due, or zero.
func (e *Engine) forecastWake() time.Time {
	f := &e.forecast
	var at time.Time
	if f.stale && !f.at.IsZero() {
		at = f.at.Add(e.forecastEvery())
	}
	// With no holder, the next starvation wakes the engine, and the head is planned then.
	if f.headStale && !f.headAt.IsZero() && e.queue.Starving() != "" {
		if h := f.headAt.Add(e.reservationEvery()); at.IsZero() || h.Before(at) {
			at = h
		}
	}
	return at
}

// movedStart reports whether a group's expected start changed enough to report: it
// became known or unknown, the reason it is unknown changed, or it moved by more than
// a tenth of the wait left and at least a minute.
func movedStart(old, cur forecast.Start, now time.Time) bool {
	if old.At.IsZero() != cur.At.IsZero() {
		return true
	}
	if cur.At.IsZero() {
		return old.Unknown != cur.Unknown
	}
	d := cur.At.Sub(old.At).Abs()
	return d > time.Minute && d > cur.At.Sub(now)/10
}

// planQueue forecasts the starts of the queued groups that wait for nodes, in queue
// order, on the capacity free now and what the running groups release when they are
// expected to end. The starts are in queue order: a plan of the head needs them by key
// only to note them.
func (e *Engine) planQueue(now time.Time, last func(*queue.Entry) bool) []forecast.Start {
	f := &e.forecast
	clear(f.fromMemo) // its times are read at now
	groups := e.queuedGroups(now, last)
	if len(groups) == 0 {
		return nil
	}
	nodes, releases := e.releases(now)
	quotas := e.quotaOutlook(now, groups)
	out := f.planner.Plan(now, nodes, releases, quotas, groups, forecast.Options{Depth: forecastDepth, Tries: forecastTries})
	// The inputs' arrays are kept for the next forecast, without what they point to.
	clear(nodes)
	clear(releases)
	clear(groups)
	clear(f.membersBuf)
	f.nodesBuf, f.releasesBuf, f.groupsBuf = nodes, releases, groups
	return out
}

// queuedGroups returns the queued groups the forecast plans, in queue order: those
// waiting for room, and those preempting others, which take what their victims release;
// up to the first for which last, if given, is true; at now, when the running pods that
// keep members off some nodes are expected to end (fromOf).
func (e *Engine) queuedGroups(now time.Time, last func(*queue.Entry) bool) []forecast.Group {
	f := &e.forecast
	groups, members := f.groupsBuf[:0], f.membersBuf[:0]
	for ent := range e.queue.InOrder() {
		g := e.groups[ent.Key]
		if g == nil || !e.forecastable(g) && e.preempting[ent.Key] == nil {
			continue
		}
		fg := forecast.Group{Key: ent.Key, Runtime: ent.Runtime, Queue: ent.Queue, Charge: e.queue.LeastCharge(ent.Key)}
		from := len(members)
		needed := ent.Group.Members[:min(ent.Group.MinMember, len(ent.Group.Members))]
		var alts int
		members, alts = e.appendRequests(members, needed, 0)
		fg.Members = members[from:len(members):len(members)]
		// Claims with alternatives (firstAvailable): the group is planned with those it
		// starts earliest with.
		for alt := 1; alt < alts; alt++ {
			variant, _ := e.appendRequests(nil, needed, alt)
			fg.Variants = append(fg.Variants, variant)
		}
		if r := e.rulesOf(g); r.nodes != nil || r.apart != nil || r.domains != nil || r.blocks != nil {
			fg.Nodes, fg.Apart, fg.Domains = firstOf(r.nodes, len(fg.Members)), firstOf(r.apart, len(fg.Members)), r.domains
			fg.From = e.fromOf(g, r.blocks, len(fg.Members), now)
		}
		groups = append(groups, fg)
		if len(groups) > forecastDepth || last != nil && last(ent) {
			break // the rest are unknown for the same reason
		}
	}
	f.membersBuf = members
	return groups
}

// appendRequests appends to out what each of members asks for, its claims' devices
// counted with their alt-th alternative (kubefit.PendingDevices), and returns it with
// the most alternatives a member's claims list (kubefit.Alternatives).
func (e *Engine) appendRequests(out []cluster.Resources, members []placement.Member, alt int) ([]cluster.Resources, int) {
	var seen map[string]bool
	var fewest cluster.Resources
	alts := 1
	for _, m := range members {
		req := m.Requests
		if req == nil {
			req = cluster.PodRequests(m.Pod)
		}
		if kubefit.HasResourceClaims(m.Pod) {
			if seen == nil {
				seen = map[string]bool{} // a claim members share is counted once
				fewest = e.forecast.devices.count(e.snap.Objects()).fewest
			}
			req = withDevices(req, kubefit.PendingDevices(e.snap, m.Pod, seen, fewest, alt))
			alts = max(alts, kubefit.Alternatives(e.snap, m.Pod))
		}
		out = append(out, asDevices(req, e.extendedClasses().classOf)) // the forecast ignores its pods count
	}
	return out, alts
}

// releases returns the nodes that take pods, and what each group's members release
// there, and when, from the pods the snapshot counts on the nodes: bound, or being
// bound by the engine. Each member of a group is listed, in the order membersOn keeps,
// so that a node's releases are the same while its pods are (forecast.Node's Gen): those
// whose capacity does not come back in the forecast are Held.
func (e *Engine) releases(now time.Time) ([]forecast.Node, []forecast.Release) {
	f := &e.forecast
	f.pass++
	nodes, releases := f.nodesBuf[:0], f.releasesBuf[:0]
	devices := f.devices.count(e.snap.Objects())
	classOf := e.extendedClasses().classOf
	for _, n := range e.snap.Nodes() {
		if !n.Ready() || n.Node.Spec.Unschedulable {
			continue
		}
		c := e.membersOn(n)
		// The forecast only reads them: no copy.
		node := forecast.Node{Name: n.Name(), Free: n.Allocatable, Used: n.Requested, Gen: c.read}
		hasDevices := devices.total[n.Name()] != nil
		if hasDevices {
			// Claims change without the node's pods: the node and its releases are read
			// anew at every forecast.
			node.Free, node.Used, node.Gen = withDevices(n.Allocatable, devices.total[n.Name()]),
				withDevices(n.Requested, devices.claimed[n.Name()]), 0
		}
		served := servedNode(&node, n.Allocatable, classOf, hasDevices)
		nodes = append(nodes, node)
		if c.fresh || hasDevices || served || f.holdsChanged(c) {
			e.readReleases(c, n.Name(), now)
			if served {
				servedReleases(c.releases, n.Allocatable, classOf)
			}
		} else {
			e.readMoving(c, now)
		}
		releases = append(releases, c.releases...)
	}
	if len(f.pods) > len(nodes) {
		f.dropUnread()
	}
	f.nodeReads++
	return nodes, releases
}

// noteChanged records that g may read differently in the next forecast: its phase,
// members (their objects or requests), eviction or start changed. The releases of a group that is running, or
// whose members are all finished, stay the same until it does (endMoves).
//
// A group changes on most Steps of the engine, and is read once per forecast: it is
// marked with the number of the next read rather than kept in a set emptied by each,
// and so are the nodes it had members on when they were read (group.onNodes), so that
// a forecast does not look at every member on every node to find the nodes to read
// again (a scan of them was 2.5% of the October replay's CPU profile).
func (f *forecastState) noteChanged(g *group) {
	next := f.nodeReads + 1
	if g.changedFor == next {
		return
	}
	g.changedFor = next
	g.onNodes = slices.DeleteFunc(g.onNodes, func(c *nodePods) bool { return c.dropped })
	for _, c := range g.onNodes {
		c.changedFor = next
	}
}

// changedSinceRead reports whether g was noted changed since the last read of the
// nodes was done.
func (f *forecastState) changedSinceRead(g *group) bool { return g.changedFor == f.nodeReads+1 }

// holdsChanged reports whether a member of a group that changed since the last
// forecast is on the node c records.
func (f *forecastState) holdsChanged(c *nodePods) bool { return c.changedFor == f.nodeReads+1 }

// readReleases reads the releases of the members c records on node, and notes those
// whose time moves with the clock.
func (e *Engine) readReleases(c *nodePods, node string, now time.Time) {
	c.releases, c.moving, c.fresh = c.releases[:0], c.moving[:0], false
	for i, m := range c.members {
		c.releases = append(c.releases, e.releaseOf(m, node, now))
		if !terminal(m.pod) && len(m.group.members) > 0 && m.group.started && endMoves(m.group) {
			c.moving = append(c.moving, i)
		}
	}
}

// readMoving reads again the releases of c whose time moves with the clock; the others
// are as the last forecast read them.
func (e *Engine) readMoving(c *nodePods, now time.Time) {
	for _, i := range c.moving {
		rel := &c.releases[i]
		*rel = e.releaseOf(c.members[i], rel.Node, now)
	}
}

// releaseOf is what member m releases on node, and when: Held when its capacity does
// not come back in the forecast.
func (e *Engine) releaseOf(m memberOn, node string, now time.Time) forecast.Release {
	r := e.readGroup(m.group, now)
	held := terminal(m.pod) || !r.live || !r.end.known
	res := m.requests
	if kubefit.HoldsDevices(m.pod) {
		res = withDevices(res, kubefit.OwnDevices(e.snap, m.pod))
	}
	return forecast.Release{Node: node, Resources: res, At: r.end.at, Held: held}
}

// membersOn returns the record of the members of groups among the pods the snapshot
// counts on node n, with their groups, member objects and requests as they were when
// the node last changed: a forecast reads every pod on every node, and few nodes change
// between two forecasts. The node's generation moves on with every change of its pods, and a pod's
// group, member object and requests change only with its SetPod or RemovePod, which
// change the snapshot's record of it, and so its node: the pods the snapshot counts at
// a forecast are bound, since placements revert what they assume within the admission
// pass. A group dropped or replaced since, which leaves the nodes alone, is not live
// (readGroup).
func (e *Engine) membersOn(n *cluster.NodeInfo) *nodePods {
	f := &e.forecast
	c := f.pods[n]
	if c == nil {
		if f.pods == nil {
			f.pods = map[*cluster.NodeInfo]*nodePods{}
		}
		c = &nodePods{}
		f.pods[n] = c
	}
	c.pass = f.pass
	if c.gen == n.Generation() && c.gen != 0 {
		return c
	}
	f.reads++
	last := c.members
	c.gen, c.read, c.members, c.fresh = n.Generation(), f.reads, c.spare[:0], true
	for key := range n.Pods() {
		if m, ok := f.unchangedMember(last, key); ok {
			c.members = append(c.members, m)
			continue
		}
		g := e.groups[e.podGroup[key]]
		if g == nil {
			continue
		}
		if p := g.members[key]; p != nil {
			c.members = append(c.members, memberOn{key: key, group: g, pod: p, requests: g.requests[key]})
			g.noteOn(c) // a member kept from the last reading was noted then
		}
	}
	clear(last)
	c.spare = last
	return c
}

// unchangedMember returns the member of members under key if its group did not change
// since they were read, which leaves it as it was: a pod's group, member object and
// requests change only with SetPod or RemovePod, which note the groups concerned
// (noteChanged), and a group leaves the engine only without members. It spares a
// node whose pods changed looking up again the members that stayed.
func (f *forecastState) unchangedMember(members []memberOn, key string) (memberOn, bool) {
	for _, m := range members {
		if m.key == key {
			return m, !f.changedSinceRead(m.group)
		}
	}
	return memberOn{}, false
}

// readGroup reads g for the forecast: whether it is still the group the engine keeps
// under its key and started, and then its expected end. A group leaves the engine only
// once it has no member left, and members are added to the group under its key: a group
// with a member is the engine's, without looking its key up.
func (e *Engine) readGroup(g *group, now time.Time) groupRead {
	if len(g.members) == 0 || !g.started {
		return groupRead{}
	}
	return groupRead{live: true, end: e.endOf(g, now)}
}

// dropUnread forgets the nodes the forecast did not read: gone, or not taking pods.
// There are some only when more nodes are recorded than the forecast read.
func (f *forecastState) dropUnread() {
	for n, c := range f.pods {
		if c.pass != f.pass {
			delete(f.pods, n)
			c.dropped = true
		}
	}
}

// forecastable reports whether the forecast plans a queued group: it waits for room, or
// for quota the forecast can tell the freeing of (a queue outside a cohort), or has not
// been decided yet. Groups that are invalid, or can never fit their quota, take no
// capacity in the forecast.
func (e *Engine) forecastable(g *group) bool {
	// Without its claims, what it asks for is not known yet.
	return e.claimsNotMade(g) == "" && e.waitIsForecast(g)
}

// waitIsForecast reports whether what a queued group waits for is what the forecast
// plans (see forecastable), its claims aside.
func (e *Engine) waitIsForecast(g *group) bool {
	if g.waiting == nil {
		return true
	}
	switch g.waiting.Kind {
	case queue.Placement, queue.Reserved:
		return true
	case queue.QuotaExceeded:
		return e.queue.OwnQuota(g.waiting.Queue)
	}
	return false
}

// quotaOutlook is the quota of each queue of groups that has one the forecast can
// follow: what is left now, and what each admitted group gives back when it is expected
// to end.
func (e *Engine) quotaOutlook(now time.Time, groups []forecast.Group) []forecast.Quota {
	var out []forecast.Quota
	seen := map[string]bool{}
	for _, fg := range groups {
		if seen[fg.Queue] {
			continue
		}
		seen[fg.Queue] = true
		left, holders, ok := e.queue.QuotaLeft(fg.Queue)
		if !ok {
			continue
		}
		q := forecast.Quota{Queue: fg.Queue, Free: left}
		for key, charge := range holders {
			g := e.groups[key]
			if g == nil {
				continue
			}
			if en := e.endOf(g, now); en.known {
				q.Releases = append(q.Releases, forecast.QuotaRelease{At: en.at, Resources: charge})
			}
		}
		out = append(out, q)
	}
	return out
}

// Forecast returns when the queued groups' starts were last forecast (zero before the
// first forecast) and the expected start of each group still queued that has one, by
// key. The iterator is made once, by New: the simulator asks at every step.
func (e *Engine) Forecast() (time.Time, iter.Seq2[string, time.Time]) {
	return e.forecast.at, e.forecast.seq
}

// forecastStarts yields the expected start of each group still queued that has one.
func (e *Engine) forecastStarts(yield func(string, time.Time) bool) {
	for key, s := range e.forecast.starts {
		g := e.groups[key]
		if s.At.IsZero() || g == nil || !g.started || g.state.Phase() != lifecycle.Queued {
			continue
		}
		if !yield(key, s.At) {
			return
		}
	}
}

// PlannedNodes returns the nodes the latest forecast planned queued group key on,
// those where it is expected to start soonest given the groups ahead of it, or nil
// (queue.Estimator).
func (e *Engine) PlannedNodes(key string) []string { return e.forecast.nodes[key] }
