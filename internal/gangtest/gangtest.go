// Package gangtest builds the nodes, pods and groups that muster's tests are made of, so a
// test reads as its scenario: gangtest.Node("n1").GPU(8).Obj(), gangtest.Group("a").Members(8).GPU(1).
package gangtest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/placement"
)

// GPU is the extended resource name tests use for accelerators.
const GPU corev1.ResourceName = "nvidia.com/gpu"

// NodeBuilder builds a Ready, schedulable node; 32 cpu, 256Gi memory and 110 pods unless set.
type NodeBuilder struct{ n *corev1.Node }

// Node starts a node named name.
func Node(name string) *NodeBuilder {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("32"),
				corev1.ResourceMemory: resource.MustParse("256Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	return &NodeBuilder{n: n}
}

// GPU sets the node's allocatable nvidia.com/gpu.
func (b *NodeBuilder) GPU(n int64) *NodeBuilder { return b.Res(GPU, fmt.Sprint(n)) }

// CPU sets allocatable cpu.
func (b *NodeBuilder) CPU(q string) *NodeBuilder { return b.Res(corev1.ResourceCPU, q) }

// Mem sets allocatable memory.
func (b *NodeBuilder) Mem(q string) *NodeBuilder { return b.Res(corev1.ResourceMemory, q) }

// Pods sets the allocatable pod count.
func (b *NodeBuilder) Pods(n int64) *NodeBuilder { return b.Res(corev1.ResourcePods, fmt.Sprint(n)) }

// Res sets one allocatable resource.
func (b *NodeBuilder) Res(name corev1.ResourceName, q string) *NodeBuilder {
	b.n.Status.Allocatable[name] = resource.MustParse(q)
	b.n.Status.Capacity = b.n.Status.Allocatable.DeepCopy()
	return b
}

// Label sets a label.
func (b *NodeBuilder) Label(k, v string) *NodeBuilder { b.n.Labels[k] = v; return b }

// Taint adds a taint.
func (b *NodeBuilder) Taint(key, value string, effect corev1.TaintEffect) *NodeBuilder {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// NotReady marks the node's Ready condition False.
func (b *NodeBuilder) NotReady() *NodeBuilder {
	b.n.Status.Conditions[0].Status = corev1.ConditionFalse
	return b
}

// Cordon marks the node unschedulable.
func (b *NodeBuilder) Cordon() *NodeBuilder { b.n.Spec.Unschedulable = true; return b }

// Obj returns the node.
func (b *NodeBuilder) Obj() *corev1.Node { return b.n }

// Nodes builds count nodes named prefix-0..prefix-(count-1) from one template.
func Nodes(prefix string, count int, shape func(*NodeBuilder) *NodeBuilder) []*corev1.Node {
	out := make([]*corev1.Node, count)
	for i := range out {
		out[i] = shape(Node(fmt.Sprintf("%s-%d", prefix, i))).Obj()
	}
	return out
}

// PodBuilder builds a pod with one container.
type PodBuilder struct{ p *corev1.Pod }

// Pod starts a pod in namespace "default".
func Pod(name string) *PodBuilder {
	return &PodBuilder{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			SchedulerName: "muster",
			Containers:    []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}}},
		},
	}}
}

// GPU requests n nvidia.com/gpu (as request and limit, as extended resources require).
func (b *PodBuilder) GPU(n int64) *PodBuilder {
	q := resource.MustParse(fmt.Sprint(n))
	b.p.Spec.Containers[0].Resources.Requests[GPU] = q
	b.p.Spec.Containers[0].Resources.Limits[GPU] = q
	return b
}

// Req requests a resource of the main container.
func (b *PodBuilder) Req(name corev1.ResourceName, q string) *PodBuilder {
	b.p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q)
	return b
}

// Init adds an init container with the given requests.
func (b *PodBuilder) Init(requests corev1.ResourceList) *PodBuilder {
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{
		Name: fmt.Sprintf("init-%d", len(b.p.Spec.InitContainers)), Resources: corev1.ResourceRequirements{Requests: requests},
	})
	return b
}

// Overhead sets the pod overhead.
func (b *PodBuilder) Overhead(list corev1.ResourceList) *PodBuilder {
	b.p.Spec.Overhead = list
	return b
}

// Selector sets a nodeSelector entry.
func (b *PodBuilder) Selector(k, v string) *PodBuilder {
	if b.p.Spec.NodeSelector == nil {
		b.p.Spec.NodeSelector = map[string]string{}
	}
	b.p.Spec.NodeSelector[k] = v
	return b
}

// Affinity adds a required node affinity requirement (one term, ANDed with earlier ones).
func (b *PodBuilder) Affinity(key string, op corev1.NodeSelectorOperator, values ...string) *PodBuilder {
	if b.p.Spec.Affinity == nil {
		b.p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}},
		}}
	}
	term := &b.p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
	return b
}

// Tolerate adds a toleration for key=value with effect.
func (b *PodBuilder) Tolerate(key, value string, effect corev1.TaintEffect) *PodBuilder {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, corev1.Toleration{
		Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: effect,
	})
	return b
}

// Node binds the pod to a node, as if scheduled.
func (b *PodBuilder) Node(name string) *PodBuilder { b.p.Spec.NodeName = name; return b }

// Obj returns the pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.p }

// GroupBuilder builds a placement.Group of identical members.
type GroupBuilder struct {
	name  string
	count int
	min   int
	pod   func(name string) *PodBuilder
	extra []placement.Member
	topo  placement.Topology
}

// Group starts a group named name with one member.
func Group(name string) *GroupBuilder {
	return &GroupBuilder{name: name, count: 1, pod: Pod}
}

// Members sets the number of identical members (and minMember, unless set).
func (b *GroupBuilder) Members(n int) *GroupBuilder { b.count = n; return b }

// Min sets minMember.
func (b *GroupBuilder) Min(n int) *GroupBuilder { b.min = n; return b }

// GPU gives every member n GPUs.
func (b *GroupBuilder) GPU(n int64) *GroupBuilder {
	prev := b.pod
	b.pod = func(name string) *PodBuilder { return prev(name).GPU(n) }
	return b
}

// With applies f to every member's pod.
func (b *GroupBuilder) With(f func(*PodBuilder) *PodBuilder) *GroupBuilder {
	prev := b.pod
	b.pod = func(name string) *PodBuilder { return f(prev(name)) }
	return b
}

// Plus adds a member of a different shape (a launcher, say); it counts toward minMember.
func (b *GroupBuilder) Plus(name string, pod *corev1.Pod) *GroupBuilder {
	b.extra = append(b.extra, placement.Member{Name: name, Pod: pod})
	return b
}

// Topology sets the group's topology constraints.
func (b *GroupBuilder) Topology(t placement.Topology) *GroupBuilder { b.topo = t; return b }

// Build returns the placement request. Members are named NAME-worker-I.
func (b *GroupBuilder) Build() placement.Group {
	g := placement.Group{Name: b.name, Topology: b.topo}
	g.Members = append(g.Members, b.extra...)
	for i := 0; i < b.count; i++ {
		name := fmt.Sprintf("%s-worker-%d", b.name, i)
		g.Members = append(g.Members, placement.Member{Name: name, Pod: b.pod(name).Obj()})
	}
	g.MinMember = b.min
	if g.MinMember == 0 {
		g.MinMember = len(g.Members)
	}
	return g
}

// Namespace moves the pod to namespace ns.
func (b *PodBuilder) Namespace(ns string) *PodBuilder {
	b.p.Namespace = ns
	return b
}

// Label sets a label on the pod.
func (b *PodBuilder) Label(k, v string) *PodBuilder {
	if b.p.Labels == nil {
		b.p.Labels = map[string]string{}
	}
	b.p.Labels[k] = v
	return b
}

func (b *PodBuilder) affinity() *corev1.Affinity {
	if b.p.Spec.Affinity == nil {
		b.p.Spec.Affinity = &corev1.Affinity{}
	}
	return b.p.Spec.Affinity
}

func term(k, v, topologyKey string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
		TopologyKey:   topologyKey,
	}
}

// AntiAffinity adds required pod anti-affinity: no pod labelled k=v in the same value of
// topologyKey (kubernetes.io/hostname: one per node).
func (b *PodBuilder) AntiAffinity(k, v, topologyKey string) *PodBuilder {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(k, v, topologyKey))
	return b
}

// PodAffinity adds required pod affinity: in a value of topologyKey with a pod labelled k=v.
func (b *PodBuilder) PodAffinity(k, v, topologyKey string) *PodBuilder {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(k, v, topologyKey))
	return b
}

// Spread adds a hard topology spread constraint over topologyKey for pods labelled k=v.
func (b *PodBuilder) Spread(maxSkew int32, topologyKey, k, v string) *PodBuilder {
	b.p.Spec.TopologySpreadConstraints = append(b.p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew:           maxSkew,
		TopologyKey:       topologyKey,
		WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
	})
	return b
}

// HostPort makes the pod's first container listen on a host port (TCP).
func (b *PodBuilder) HostPort(port int32) *PodBuilder {
	c := &b.p.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	return b
}

// Claim mounts the PersistentVolumeClaim claim (in the pod's namespace) as a volume.
func (b *PodBuilder) Claim(claim string) *PodBuilder {
	b.p.Spec.Volumes = append(b.p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return b
}
