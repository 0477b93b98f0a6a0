package engine

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/muster-sched/muster/internal/kubefit"
)

// Output is what one Step asks the caller to do. Its Events and Changed are valid until
// the next Step, which reuses their arrays: a caller that keeps them copies them.
type Output struct {
	// Plans are the placements decided in this Step, one per group: an admitted group's
	// whole placement, or the members of an admitted group placed again alone (a failed
	// bind, a replacement). The caller records each plan before its first step and
	// carries its steps out in order; Binds lists their binds.
	Plans []Plan
	// Evictions are member pods to delete; their controllers recreate them.
	Evictions []Eviction
	// ClaimReleases are claims of evicted groups reserved for the group itself (a native
	// PodGroup's spec.resourceClaims), to release: the group holds no devices while it
	// waits for its next attempt.
	ClaimReleases []ClaimRelease
	// Events are Kubernetes-style events about groups, for the group object.
	Events []Event
	// Released reports groups whose cleanup finished, with how long it took.
	Released []Release
	// Admitted reports the groups admitted in this Step and how long each waited.
	Admitted []Admission
	// Ready reports the groups that became Ready in this Step.
	Ready []Readiness
	// HeldBeforeReady is the resource-seconds that groups held before they were Ready,
	// accumulated during this Step (the increase since the previous Step), per resource.
	HeldBeforeReady map[corev1.ResourceName]float64
	// Decisions counts this Step's admission decisions by result: admitted,
	// unschedulable, impossible, quota, queue-not-found, reserved, preempting.
	Decisions map[string]int
	// Changed lists, each once and in no particular order, the groups whose Status may
	// differ from before this Step: those it advanced, stepped, admitted or placed
	// members of. A waiting group whose only news is its diagnosis, re-decided on every
	// admission pass, is not in it; callers that show the diagnosis read every group's
	// Status now and then.
	Changed []string
	// Dropped lists the groups the engine forgot since the previous Step (cancelled,
	// released and left with no member, or handed off): the caller forgets whatever it
	// keeps per group for them.
	Dropped []string
	// WakeAt is when Step must be called again if nothing else changes (zero: never).
	WakeAt time.Time
}

// ClaimRelease is one claim to take Consumer's reservation from (and to deallocate when
// none is left).
type ClaimRelease struct {
	Group string
	// Namespace and Claim name the ResourceClaim.
	Namespace, Claim string
	Consumer         resourcev1.ResourceClaimConsumerReference
}

// Plan is one group's placement as the steps that carry it out, in order.
type Plan struct {
	Group string
	// Attempt is the group's attempt the plan belongs to, counting from 1.
	Attempt int
	Steps   []Step
}

// StepKind names what a Step does.
type StepKind string

// StepBind binds Step.Pod to Step.Node, after naming Node on the claims in
// Step.Provision, binding the claims in Step.BindVolumes, and writing the allocations and
// reservations of the DRA claims in Step.Claims.
const StepBind StepKind = "Bind"

// Step is one action of a Plan.
type Step struct {
	Kind StepKind
	// Pod is the member the step is for (namespace/name), and Node its node.
	Pod  string
	Node string
	// Provision names claims of Pod, in its namespace, to mark for provisioning on Node
	// (annotation volume.kubernetes.io/selected-node) before Pod is bound: its unbound
	// claims of WaitForFirstConsumer classes.
	Provision []string
	// BindVolumes binds claims of Pod to existing volumes Node can reach (the volume's
	// spec.claimRef, as kube-scheduler writes it) before Pod is bound.
	BindVolumes []kubefit.StaticBinding
	// Claims are Pod's DRA ResourceClaims: each claim's allocation to write when it has
	// none (nil when it is allocated), and Pod to add to its reservedFor, before Pod is
	// bound.
	Claims []kubefit.ClaimAllocation
}

// Binds returns the bind steps of every plan, in order, with their groups.
func (o *Output) Binds() []Bind {
	var out []Bind
	for _, p := range o.Plans {
		for _, s := range p.Steps {
			if s.Kind == StepBind {
				out = append(out, Bind{Group: p.Group, Pod: s.Pod, Node: s.Node})
			}
		}
	}
	return out
}

// AddBind appends a bind of pod to node to group's plan in o, starting the plan (of
// attempt 1) if o has none for the group yet: for the simulator's baseline schedulers,
// which have no attempts.
func (o *Output) AddBind(group, pod, node string) {
	if n := len(o.Plans); n == 0 || o.Plans[n-1].Group != group {
		o.Plans = append(o.Plans, Plan{Group: group, Attempt: 1})
	}
	last := &o.Plans[len(o.Plans)-1]
	last.Steps = append(last.Steps, Step{Kind: StepBind, Pod: pod, Node: node})
}

// Bind is one bind of a plan: a pod of Group to bind to Node.
type Bind struct {
	Group string
	Pod   string // namespace/name
	Node  string
}

// Eviction asks the caller to delete a member pod.
type Eviction struct {
	Group   string
	Pod     string
	Reason  string
	Message string
}

// EventType is Normal or Warning, as Kubernetes events.
type EventType string

// Event types.
const (
	Normal  EventType = "Normal"
	Warning EventType = "Warning"
)

// Event is a Kubernetes-style event about a group.
type Event struct {
	Group   string
	Type    EventType
	Reason  string
	Message string
}

// Admission reports an admitted group.
type Admission struct {
	Group string
	Queue string
	// Waited is the time from the group's (re)queueing to its admission.
	Waited time.Duration
}

// Readiness reports a group whose minMember members became Ready.
type Readiness struct {
	Group string
	// After is the time from the attempt's admission to minMember Ready.
	After time.Duration
}

// Release reports a finished cleanup.
type Release struct {
	Group string
	After time.Duration
}

func (o *Output) decision(result string) { o.decisions(result, 1) }

func (o *Output) decisions(result string, n int) {
	if o.Decisions == nil {
		o.Decisions = map[string]int{}
	}
	o.Decisions[result] += n
}

// touch lists the group of key in out.Changed, once. Whether a group the engine has is
// listed already is told by its stamp (group.touched) rather than a set: a busy Step
// lists thousands, and a map made for each Step was a twentieth of what a month's replay
// allocated.
func (e *Engine) touch(out *Output, key string) {
	if g := e.groups[key]; g != nil {
		e.touchGroup(out, g)
		return
	}
	if !slices.Contains(out.Changed, key) { // forgotten in this Step: rare
		out.Changed = append(out.Changed, key)
	}
}

// touchGroup is touch for a group the engine has.
func (e *Engine) touchGroup(out *Output, g *group) {
	if g.touched != e.steps {
		g.touched = e.steps
		out.Changed = append(out.Changed, g.key)
	}
}

func (o *Output) held(name corev1.ResourceName, v float64) {
	if o.HeldBeforeReady == nil {
		o.HeldBeforeReady = map[corev1.ResourceName]float64{}
	}
	o.HeldBeforeReady[name] += v
}
