package engine

import (
	"maps"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/lifecycle"
	"github.com/muster-sched/muster/internal/queue"
)

// Config holds the engine's defaults.
type Config struct {
	// DefaultQueue is the queue of groups that name none.
	DefaultQueue string
	// Policy is the lifecycle policy of groups whose queue and spec set nothing.
	Policy lifecycle.Policy
	// StarvationThreshold is how long a group may wait before capacity is reserved for it.
	StarvationThreshold time.Duration
	// ForecastEvery is how often, at most, the queues' expected starts are forecast
	// again (DefaultForecastEvery when zero): a plan of up to 256 groups, so that a Step
	// does not pay for one each time; a group queued in between gets its expected start
	// at the next.
	ForecastEvery time.Duration
	// ReservationEvery is how often, at most, the nodes of the starving group that holds
	// the reservation are planned again between two forecasts (ForecastEvery when zero):
	// a plan of the groups ahead of it and itself, most often itself alone.
	ReservationEvery time.Duration
	// SizeOrder moves groups expected to hold much back in their queue's order, and
	// groups expected to hold little ahead; the zero value keeps the order of queue time.
	SizeOrder SizeOrder
	// DisablePreemption turns gang preemption off: a waiting group never evicts
	// admitted groups, neither of lower priority nor of the queues that borrow its
	// queue's quota (see preempt): a cohort's queues then lend without taking back.
	DisablePreemption bool
	// PreemptionSlack is how long past its victims' longest termination grace period a
	// preemption waits for them to give its nodes back before it ends
	// (DefaultPreemptionSlack when zero; see ReasonPreemptionTimedOut).
	PreemptionSlack time.Duration
	// Filters runs kube-scheduler's filter plugins for placement, with the configured
	// plugin arguments; nil uses the default profile's arguments.
	Filters *kubefit.Host
}

// Queue is a queue as the engine sees it: the admission queue's view (name, quota,
// order, cohort) plus the lifecycle defaults for its groups.
type Queue struct {
	queue.Queue
	Defaults PolicyOverrides
}

// Engine is the decision core. It is not safe for concurrent use.
type Engine struct {
	cfg Config
	// steps counts Steps (see touch).
	steps  uint64
	snap   *cluster.Snapshot
	queue  *queue.Manager
	queues map[string]Queue
	groups map[string]*group
	// podGroup maps each member pod's key to its group's key.
	podGroup map[string]string
	// dirty holds the groups whose members or spec changed since the last Step;
	// dirtyKeys is the array of the last Step's sorted keys of it, which the next reuses.
	dirty     map[string]bool
	dirtyKeys []string
	// dropped holds the groups forgotten since the last Step, for Output.Dropped.
	dropped []string
	// lastEvents and lastChanged are the arrays of the last Output's Events and Changed,
	// which the next Step reuses: a deep queue's passes report events for hundreds of
	// thousands of groups over a month, a few per Step.
	lastEvents  []Event
	lastChanged []string
	// nodesChanged is set when nodes were added, removed or changed capacity.
	nodesChanged bool
	// schedule is set when the next Step must run an admission pass: something was
	// queued, capacity was released, or a reservation may be due.
	schedule bool
	// replace holds groups with members to place outside the queue (replacements).
	replace map[string]bool
	// releasing holds the groups whose own claims an eviction asked to release and that
	// have not seen them released (see retryClaimReleases).
	releasing map[string]*group
	// timers holds the groups' wake-ups; flips, when the flips held back are due (see
	// flipQuiet).
	timers, flips timers
	// nextStarve is when the oldest waiting group crosses the starvation threshold.
	nextStarve time.Time
	// preempting holds the preemptions in flight, by preemptor.
	preempting map[string]*preemption
	// history holds what finished groups took, for the run time of groups that declare
	// none.
	history history
	// now is the time of the Step in progress, or of the last one.
	now time.Time
	// holder and holderStart are the starving group's reservation's holder and
	// expected start after the last admission pass (see noteReservation).
	holder      string
	holderStart time.Time
	// forecast is the last forecast of the queued groups' starts (see refreshForecast).
	forecast forecastState
	// draExtended is which extended resources DeviceClasses provide where no node has
	// them (see extendedByDRA).
	draExtended draExtended
	// priorities counts the groups by priority, for the lowest (see fullPassNeeded).
	priorities map[int32]int
	// fullPasses makes every admission pass decide and report every waiting group
	// (queue.Manager.Schedule), as the tests that compare it with the passes that
	// report only the changes (ScheduleChanges) set.
	fullPasses bool
	// skipped counts the waiting groups admission passes left unreported, for tests.
	skipped int
	// snapVersion changes with everything of snap that placement reads: nodes, the pods
	// counted on them, the objects the filters read (see queue.Manager.ScheduleChanges).
	// Every change of snap must go through a method that moves it on.
	snapVersion uint64
}

// New returns an engine with no nodes, pods, groups or queues.
func New(cfg Config) *Engine {
	e := &Engine{
		cfg:      cfg,
		snap:     cluster.New(nil, nil),
		queue:    queue.New(queue.Options{StarvationThreshold: cfg.StarvationThreshold, NoReclaim: cfg.DisablePreemption}),
		queues:   map[string]Queue{},
		groups:   map[string]*group{},
		podGroup: map[string]string{},
		dirty:    map[string]bool{},
		replace:  map[string]bool{},

		releasing:  map[string]*group{},
		preempting: map[string]*preemption{},
		priorities: map[int32]int{},
	}
	e.queue.SetEstimator(e)
	e.forecast.seq = e.forecastStarts
	if cfg.Filters != nil {
		kubefit.Use(e.snap, cfg.Filters)
	}
	return e
}

// Snapshot returns the engine's cluster snapshot, for diagnosis and tests. Callers must not
// modify it.
func (e *Engine) Snapshot() *cluster.Snapshot { return e.snap }

// QueueShares returns each queue's weighted share of the cluster, the fairness by which
// queues of equal priority take turns (queue.WeightedShare).
func (e *Engine) QueueShares() map[string]float64 { return e.queue.Shares(e.snap) }

// SetNode adds or updates a node.
func (e *Engine) SetNode(n *corev1.Node) {
	old := e.snap.Node(n.Name)
	if old == nil || !sameCapacity(old.Node, n) {
		e.nodesChanged = true
	}
	e.snap.SetNode(n)
	e.snapVersion++
	e.schedule = true
}

func sameCapacity(a, b *corev1.Node) bool {
	if a.Spec.Unschedulable != b.Spec.Unschedulable || len(a.Spec.Taints) != len(b.Spec.Taints) {
		return false
	}
	if !cluster.FromList(a.Status.Allocatable).Equal(cluster.FromList(b.Status.Allocatable)) {
		return false
	}
	return readyOf(a) == readyOf(b)
}

func readyOf(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// SetObject adds or updates an object placement's filters read besides nodes and pods: a
// Namespace, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode or CSIDriver
// (cluster.Snapshot.SetObject); it reports false for other kinds. A change may let a
// waiting group in, or make an Impossible one possible (a claim created), so both are
// tried again.
func (e *Engine) SetObject(obj any) bool {
	if !e.snap.SetObject(obj) {
		return false
	}
	e.snapVersion++
	e.nodesChanged, e.schedule = true, true
	return true
}

// RemoveObject forgets an object SetObject took.
func (e *Engine) RemoveObject(obj any) {
	e.snap.RemoveObject(obj)
	e.snapVersion++
	e.nodesChanged, e.schedule = true, true
}

// RemoveNode removes a node.
func (e *Engine) RemoveNode(name string) {
	e.snap.RemoveNode(name)
	e.snapVersion++
	e.nodesChanged = true
}

// SetPod adds or updates a pod. groupKey is the key of the group the pod is a member of,
// or "" for pods that are not muster's: those only count against their node.
func (e *Engine) SetPod(p *corev1.Pod, groupKey string) {
	key := cluster.PodKey(p)
	wasBound := e.snap.Bound(key)
	requests := e.requestsOf(key, p)
	var old *corev1.Pod
	if g := e.groups[e.podGroup[key]]; g != nil {
		old = g.members[key]
	}
	defer e.notePodVersion(key, p, old, wasBound)
	if node := e.pendingNode(key); node != "" && p.Spec.NodeName == "" && !terminal(p) {
		// A version from before the bind (the informer lags, or muster patched the pod
		// while binding it): the bind is still in flight, so the pod keeps its node.
		e.snap.BindRequests(key, p, node, requests)
	} else if !e.snap.AddPodRequests(key, p, requests) && wasBound {
		e.schedule = true // the pod finished or failed: its capacity is free
	}
	if old, ok := e.podGroup[key]; ok && old != groupKey {
		e.dropMember(old, key)
	}
	if groupKey == "" {
		delete(e.podGroup, key)
		return
	}
	e.podGroup[key] = groupKey
	g := e.groupFor(groupKey)
	g.members[key] = p
	g.membersGen++
	g.requests[key] = requests
	e.forecast.noteChanged(g)
	if p.Spec.NodeName != "" {
		delete(g.pending, key)
		// Its claims were written before the bind: the snapshot shows them as assumed
		// until they are observed allocated.
		delete(g.assumed, key)
	}
	e.dirty[groupKey] = true
}

// notePodVersion moves snapVersion on after SetPod, unless the snapshot reads the same
// of the pod as before: it did not count then and does not now (an unbound pod), or it
// is the same pod on the same node with the same labels and spec (a status update).
func (e *Engine) notePodVersion(key string, p, old *corev1.Pod, wasBound bool) {
	bound := e.snap.Bound(key)
	switch {
	case !wasBound && !bound:
		return
	case wasBound && bound && old != nil && old != p && old.UID == p.UID && old.Spec.NodeName == p.Spec.NodeName &&
		maps.Equal(old.Labels, p.Labels) && sameSpec(old, p):
		// The specs are compared through pointers: compared as values, each was copied
		// into an interface first (57 MB over the October replay).
		return
	}
	e.snapVersion++
}

// sameSpec reports whether two versions of a pod have the same spec: the same
// metadata.generation, or, where it is not set, equal specs. Since Kubernetes 1.33
// (KEP-5067) the API server sets a pod's generation to 1 on create and moves it on every
// change of the spec, through the pod or its resize and ephemeralcontainers
// subresources; the binding subresource sets spec.nodeName without moving it, which the
// caller compares apart. Comparing the specs took 2.7% of the instructions of the
// October replay's first 20,000 jobs: each status write of a bound pod by its kubelet
// brings a new version of an unchanged spec.
func sameSpec(old, p *corev1.Pod) bool {
	if old.Generation > 0 && p.Generation > 0 {
		return old.Generation == p.Generation
	}
	return reflect.DeepEqual(&old.Spec, &p.Spec)
}

// requestsOf returns a pod's requests (cluster.PodRequests): those computed for the
// version of the pod the engine has, when the new one has the same UID and spec
// generation (the kubelet's status writes and the bind leave the spec alone), or else
// computed anew. The result is shared: callers must not modify it.
func (e *Engine) requestsOf(key string, p *corev1.Pod) cluster.Resources {
	if g := e.groups[e.podGroup[key]]; g != nil && p.Generation > 0 {
		if old := g.members[key]; old != nil && old.UID == p.UID && old.Generation == p.Generation {
			if r := g.requests[key]; r != nil {
				return r
			}
		}
	}
	return cluster.PodRequests(p)
}

// pendingNode returns the node a member's bind was issued to and not yet observed, or "".
func (e *Engine) pendingNode(podKey string) string {
	if g := e.groups[e.podGroup[podKey]]; g != nil {
		return g.pending[podKey]
	}
	return ""
}

// RemovePod forgets a pod that was deleted.
func (e *Engine) RemovePod(key string) {
	if e.snap.Bound(key) {
		e.schedule = true
		e.snapVersion++
	}
	e.snap.RemovePod(key)
	if gk, ok := e.podGroup[key]; ok {
		e.dropMember(gk, key)
		delete(e.podGroup, key)
	}
}

func (e *Engine) dropMember(groupKey, podKey string) {
	if g := e.groups[groupKey]; g != nil {
		delete(g.members, podKey)
		g.membersGen++
		delete(g.requests, podKey)
		delete(g.pending, podKey)
		if g.assumed[podKey] != nil {
			g.unassume(podKey)
			e.snapVersion++
		}
		delete(g.evicting, podKey)
		e.forecast.noteChanged(g)
		e.dirty[groupKey] = true
	}
}

// Started reports whether the engine keeps a lifecycle for the group. Until it does, a
// spec's Past is read when the group starts; after, it is not.
func (e *Engine) Started(key string) bool {
	g := e.groups[key]
	return g != nil && g.started
}

// SetGroup adds or updates a group's spec. After RemoveGroup, the spec is that of a new
// object of the same name: once the old object's group has ended, the new one is a new
// group (renew).
func (e *Engine) SetGroup(spec GroupSpec) {
	g := e.groupFor(spec.Key)
	switch {
	case g.removed && !g.started:
		g.removed, g.removedMembers = false, nil // the old object's group never started: nothing to end
	case g.removed && g.state.Phase().Terminal():
		e.renew(g)
	case g.removed:
		g.respecified = true // renewed once its cancel is carried out (advance)
	}
	e.countPriority(g.spec.Priority, -1)
	e.countPriority(spec.Priority, 1)
	g.spec = spec
	g.hasSpec = true
	g.objectGone, g.goneSince = false, time.Time{} // an object of the same name is back
	e.dirty[spec.Key] = true
}

// renew replaces a group that ended with its deleted object by a new group for the
// object of the same name created since, with the pods that name it: without it, those
// pods joined the cancelled group, and waited in it for as long as they existed (a
// RayCluster deleted and created again, whose new pods came while the old ones were
// being deleted). The members being evicted stay so in the new group, and are never
// placed again. When the new object comes before the old group's cancel is carried
// out, the cancel evicts only the pods that were members when the old object went
// (removedMembers), and the group is renewed after it.
//
// The group keeps its record (the same *group), emptied, and its place in the engine:
// what the forecast kept of the nodes points to the groups of their pods, and a pod's
// group changes only with the pod's news to the engine (see membersOn).
func (e *Engine) renew(g *group) {
	e.release(g)
	*g = group{key: g.key, spec: g.spec, hasSpec: g.hasSpec, // the new object's spec, set since it came
		members: g.members, requests: g.requests, evicting: g.evicting, membersGen: g.membersGen + 1,
		pending: map[string]string{}, assumed: map[string]func(){},
		onNodes: g.onNodes} // the forecast's records of the nodes still list its members
}

// RemoveGroup reports that a group's object (or, for Labels and Single groups, its last
// pod) is gone: the group is cancelled and everything it holds is released.
//
// Except when muster's eviction took it: an object owned by a member pod
// (GroupSpec.ObjectOwner), as a LeaderWorkerSet's Volcano PodGroup is by the group's
// leader, goes with that pod, by garbage collection, when muster evicts the group, and
// its owner creates the pods and an object of the same name again. Such a group keeps
// its attempts and failures, or its Failed verdict, out of the queue, until that object
// comes (SetGroup) or emptyRetention has passed: without this, a group that never
// becomes Ready would start over at attempt 1 after every eviction and never fail.
func (e *Engine) RemoveGroup(key string) {
	if g := e.groups[key]; g != nil {
		if !g.definedByPods() && g.evictedOwner != "" && g.spec.ObjectOwner == g.evictedOwner {
			g.objectGone = true
		} else if !g.removed {
			g.removed, g.removedMembers = true, make(map[string]bool, len(g.members))
			for key := range g.members {
				g.removedMembers[key] = true
			}
		}
		e.dirty[key] = true
	}
}

// HandOff reports that the state of a group defined by its pods, being evicted, is kept
// by their owner from now on: muster suspended the Job that owns them and recorded the
// group's lifecycle on it. The group is not retained: it leaves the engine, neither
// cancelled nor failed, at once if it has no member left (the caller may have moved its
// pods out of it first), else with its last pod; pods that come later start it again,
// from the owner's record if they give one (GroupSpec.Past). A group admitted again
// before its pods are gone is not affected.
func (e *Engine) HandOff(key string) {
	g := e.groups[key]
	if g == nil || !g.definedByPods() || !g.awaitsPods {
		return
	}
	g.awaitsPods, g.handedOff = false, true
	if len(g.members) == 0 {
		e.drop(g)
		return
	}
	e.dirty[key] = true
}

// SetQueue adds or updates a queue.
func (e *Engine) SetQueue(q Queue) {
	e.queues[q.Name] = q
	e.queue.SetQueue(q.Queue)
	e.nodesChanged = true // a larger quota may make a QuotaNeverEnough group possible
	e.schedule = true
}

// Queues returns every queue with what its admitted groups hold, sorted by name.
func (e *Engine) Queues() []queue.QueueStatus { return e.queue.Queues() }

// RemoveQueue removes a queue; its groups wait with QueueNotFound.
func (e *Engine) RemoveQueue(name string) {
	delete(e.queues, name)
	e.queue.RemoveQueue(name)
	e.schedule = true
}

func (e *Engine) groupFor(key string) *group {
	g := e.groups[key]
	if g == nil {
		g = &group{key: key, members: map[string]*corev1.Pod{}, requests: map[string]cluster.Resources{}, pending: map[string]string{},
			assumed: map[string]func(){}}
		e.groups[key] = g
		e.countPriority(g.spec.Priority, 1)
	}
	return g
}
