package placement_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// TestNodesAdmitting: on nodes a-0, a-1 (pool a), b-0 (pool b) and t-0 (pool b, tainted),
// each member gets the nodes its selector, affinity and tolerations admit, nil when
// every node does, and none when no node does; a node set again is read again.
func TestNodesAdmitting(t *testing.T) {
	nodes := []*corev1.Node{
		gt.Node("a-0").GPU(8).Label("pool", "a").Obj(),
		gt.Node("a-1").GPU(8).Label("pool", "a").Obj(),
		gt.Node("b-0").GPU(8).Label("pool", "b").Obj(),
		gt.Node("t-0").GPU(8).Label("pool", "b").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj(),
	}
	snap := cluster.New(nodes, nil)
	member := func(name string, p *corev1.Pod) placement.Member { return placement.Member{Name: name, Pod: p} }
	group := func(members ...placement.Member) placement.Group {
		return placement.Prepare(placement.Group{Name: "g", MinMember: len(members), Members: members})
	}
	for _, tc := range []struct {
		name  string
		group placement.Group
		want  [][]string
	}{
		{"tolerating, no selector: every node", group(member("m", gt.Pod("m").GPU(1).Tolerate("dedicated", "x", corev1.TaintEffectNoSchedule).Obj())), nil},
		{"no toleration: every node but the tainted one", group(member("m", gt.Pod("m").GPU(1).Obj())), [][]string{{"a-0", "a-1", "b-0"}}},
		{"selector of pool a, shared by two workers; a launcher free of it", group(
			member("launcher", gt.Pod("launcher").GPU(1).Obj()),
			member("w-0", gt.Pod("w-0").GPU(1).Selector("pool", "a").Obj()),
			member("w-1", gt.Pod("w-1").GPU(1).Selector("pool", "a").Obj()),
		), [][]string{{"a-0", "a-1", "b-0"}, {"a-0", "a-1"}, {"a-0", "a-1"}}},
		{"affinity to pool b, tolerating", group(member("m", gt.Pod("m").GPU(1).Affinity("pool", corev1.NodeSelectorOpIn, "b").
			Tolerate("dedicated", "x", corev1.TaintEffectNoSchedule).Obj())), [][]string{{"b-0", "t-0"}}},
		{"a pool no node is in", group(member("m", gt.Pod("m").GPU(1).Selector("pool", "c").Obj())), [][]string{{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// cmp tells the nil that stands for every node from none.
			if diff := cmp.Diff(tc.want, placement.NodesAdmitting(snap, tc.group)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
	// The taint is lifted: the untolerating member may use t-0 too.
	snap.SetNode(gt.Node("t-0").GPU(8).Label("pool", "b").Obj())
	if got := placement.NodesAdmitting(snap, group(member("m", gt.Pod("m").GPU(1).Obj()))); got != nil {
		t.Errorf("with no taint left: nodes %v, want nil (every node)", got)
	}
}

// TestMembersApart: on four nodes, three in pool a, the members whose anti-affinity over
// the hostname, or spread of at most one per node, selects their own labels are one class
// per rule, across shapes; so are a shape's members that ask for a host port. A launcher
// free of them, anti-affinity to other labels or through a namespace selector, rules
// over zones, a spread by two, one that does not select the pod, one with more members
// than the nodes it counts (then a node may hold two), and one whose matchLabelKeys
// differ are not kept apart.
func TestMembersApart(t *testing.T) {
	snap := cluster.New([]*corev1.Node{
		gt.Node("a-0").GPU(8).Label("pool", "a").Obj(),
		gt.Node("a-1").GPU(8).Label("pool", "a").Obj(),
		gt.Node("a-2").GPU(8).Label("pool", "a").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj(),
		gt.Node("b-0").GPU(8).Label("pool", "b").Obj(),
	}, nil)
	worker := func(name string) *gt.PodBuilder {
		return gt.Pod(name).GPU(1).Label("job", "j")
	}
	withPort := func(name string) *corev1.Pod {
		p := gt.Pod(name).GPU(1).Obj()
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 29500, HostPort: 29500}}
		return p
	}
	nsSelected := worker("ns").AntiAffinity("job", "j", corev1.LabelHostname).Obj()
	nsSelected.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{}
	spread := func(name string) *gt.PodBuilder { return worker(name).Spread(1, corev1.LabelHostname, "job", "j") }
	inPoolA := func(b *gt.PodBuilder) *corev1.Pod { return b.Selector("pool", "a").Obj() }
	honorTaints := func(p *corev1.Pod) *corev1.Pod {
		honor := corev1.NodeInclusionPolicyHonor
		p.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = &honor
		return p
	}
	byKeys := func(name, replica string) *corev1.Pod {
		p := spread(name).Label("replica", replica).Obj()
		p.Spec.TopologySpreadConstraints[0].MatchLabelKeys = []string{"replica"}
		return p
	}
	group := func(pods ...*corev1.Pod) placement.Group {
		var members []placement.Member
		for _, p := range pods {
			members = append(members, placement.Member{Name: p.Name, Pod: p})
		}
		return placement.Prepare(placement.Group{Name: "g", MinMember: len(members), Members: members})
	}
	for _, tc := range []struct {
		name  string
		group placement.Group
		want  []int
	}{
		{"no rule", group(worker("w-0").Obj(), worker("w-1").Obj()), nil},
		{"one per node, beside a free launcher", group(gt.Pod("launcher").GPU(1).Obj(),
			worker("w-0").AntiAffinity("job", "j", corev1.LabelHostname).Obj(),
			worker("w-1").AntiAffinity("job", "j", corev1.LabelHostname).Obj()), []int{0, 1, 1}},
		{"one rule over two shapes", group(
			worker("master").GPU(2).AntiAffinity("job", "j", corev1.LabelHostname).Obj(),
			worker("w-0").AntiAffinity("job", "j", corev1.LabelHostname).Obj()), []int{1, 1}},
		{"host port", group(withPort("p-0"), withPort("p-1")), []int{1, 1}},
		{"host port beside anti-affinity", group(withPort("p-0"),
			worker("w-0").AntiAffinity("job", "j", corev1.LabelHostname).Obj()), []int{1, 2}},
		{"anti-affinity to other labels", group(worker("w-0").AntiAffinity("job", "other", corev1.LabelHostname).Obj()), nil},
		{"over zones", group(worker("w-0").AntiAffinity("job", "j", corev1.LabelTopologyZone).Obj()), nil},
		{"namespaces by selector", group(nsSelected), nil},
		{"spread one per node", group(gt.Pod("launcher").GPU(1).Obj(), spread("w-0").Obj(), spread("w-1").Obj()), []int{0, 1, 1}},
		{"spread over two shapes", group(spread("master").GPU(2).Obj(), spread("w-0").Obj()), []int{1, 1}},
		{"spread as many as the nodes", group(spread("w-0").Obj(), spread("w-1").Obj(), spread("w-2").Obj(), spread("w-3").Obj()), []int{1, 1, 1, 1}},
		{"spread more than the nodes", group(spread("w-0").Obj(), spread("w-1").Obj(), spread("w-2").Obj(), spread("w-3").Obj(),
			spread("w-4").Obj()), nil},
		// Pool a's tainted node counts unless the constraint honours taints.
		{"spread over a pool", group(inPoolA(spread("w-0")), inPoolA(spread("w-1")), inPoolA(spread("w-2"))), []int{1, 1, 1}},
		{"spread over a pool's untainted nodes", group(honorTaints(inPoolA(spread("w-0"))), honorTaints(inPoolA(spread("w-1"))),
			honorTaints(inPoolA(spread("w-2")))), nil},
		{"spread short of its minDomains", group(func() []*corev1.Pod {
			var out []*corev1.Pod
			for i := range 5 {
				p := spread(fmt.Sprintf("w-%d", i)).Obj()
				p.Spec.TopologySpreadConstraints[0].MinDomains = ptr.To[int32](5)
				out = append(out, p)
			}
			return out
		}()...), []int{1, 1, 1, 1, 1}},
		{"spread by two", group(worker("w-0").Spread(2, corev1.LabelHostname, "job", "j").Obj()), nil},
		{"spread of other pods", group(worker("w-0").Spread(1, corev1.LabelHostname, "job", "other").Obj()), nil},
		{"spread over zones", group(worker("w-0").Spread(1, corev1.LabelTopologyZone, "job", "j").Obj()), nil},
		{"spread by matchLabelKeys", group(byKeys("m-0", "master"), byKeys("w-0", "worker"), byKeys("w-1", "worker")), []int{1, 2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, placement.MembersApart(snap, tc.group)); diff != "" {
				t.Errorf("classes (-want +got):\n%s", diff)
			}
		})
	}
}
