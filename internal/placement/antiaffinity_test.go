package placement_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// TestAntiAffinityBlocks: zones z0 (n-0, n-1) and z1 (n-2, n-3), pod other-0 (job=other)
// running on n-0 and pod excl-0 on n-2 whose anti-affinity keeps pods labelled team=a
// out of its zone. Each member is blocked from the nodes kube-scheduler's own filter
// keeps it off, with the pods why: Place of the member held to each node by its hostname
// agrees.
func TestAntiAffinityBlocks(t *testing.T) {
	nodes := zonedNodes(2)
	other := gt.Pod("other-0").Label("job", "other").Node("n-0").Obj()
	excl := gt.Pod("excl-0").Label("job", "excl").AntiAffinity("team", "a", corev1.LabelTopologyZone).Node("n-2").Obj()
	snap := cluster.New(nodes, []*corev1.Pod{other, excl})
	for _, tc := range []struct {
		name string
		pod  func(*gt.PodBuilder) *gt.PodBuilder
		want []placement.NodeBlock
	}{{
		name: "its anti-affinity by hostname",
		pod:  func(b *gt.PodBuilder) *gt.PodBuilder { return b.AntiAffinity("job", "other", corev1.LabelHostname) },
		want: []placement.NodeBlock{{Node: "n-0", Pods: []string{"default/other-0"}}},
	}, {
		name: "its anti-affinity by zone",
		pod:  func(b *gt.PodBuilder) *gt.PodBuilder { return b.AntiAffinity("job", "other", corev1.LabelTopologyZone) },
		want: []placement.NodeBlock{{Node: "n-0", Pods: []string{"default/other-0"}}, {Node: "n-1", Pods: []string{"default/other-0"}}},
	}, {
		name: "a running pod's anti-affinity",
		pod:  func(b *gt.PodBuilder) *gt.PodBuilder { return b.Label("team", "a") },
		want: []placement.NodeBlock{{Node: "n-2", Pods: []string{"default/excl-0"}}, {Node: "n-3", Pods: []string{"default/excl-0"}}},
	}, {
		name: "both",
		pod: func(b *gt.PodBuilder) *gt.PodBuilder {
			return b.Label("team", "a").AntiAffinity("job", "other", corev1.LabelHostname).AntiAffinity("job", "excl", corev1.LabelHostname)
		},
		want: []placement.NodeBlock{{Node: "n-0", Pods: []string{"default/other-0"}}, {Node: "n-2", Pods: []string{"default/excl-0"}},
			{Node: "n-3", Pods: []string{"default/excl-0"}}},
	}, {
		name: "neither",
		pod:  func(b *gt.PodBuilder) *gt.PodBuilder { return b.AntiAffinity("job", "none", corev1.LabelHostname) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := gang("g", 2, func(i int) *corev1.Pod { return tc.pod(gt.Pod(fmt.Sprintf("g-%d", i)).GPU(1)).Obj() })
			got := placement.AntiAffinityBlocks(snap, g)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("blocks %v, want none", got)
				}
				return
			}
			if len(got) != 2 || !reflect.DeepEqual(got[0], tc.want) || !reflect.DeepEqual(got[1], tc.want) {
				t.Fatalf("blocks %v, want %v for both members", got, tc.want)
			}
			for _, n := range nodes {
				one := gang("one", 1, func(int) *corev1.Pod {
					return tc.pod(gt.Pod("one-0").GPU(1)).Selector(corev1.LabelHostname, n.Name).Obj()
				})
				plan, diag := placement.Place(snap, one, placement.Options{})
				blocked := slices.ContainsFunc(tc.want, func(b placement.NodeBlock) bool { return b.Node == n.Name })
				if (plan == nil) != blocked {
					t.Errorf("%s: placed %v (%v), blocked %v", n.Name, plan, diag, blocked)
				}
				if plan != nil {
					plan.Revert()
				}
			}
		})
	}
}

// TestAntiAffinityBlocksNothing: with no required anti-affinity on the members or the
// pods, nothing blocks; nor do the group's own members bound on the nodes.
func TestAntiAffinityBlocksNothing(t *testing.T) {
	nodes := zonedNodes(2)
	plain := gang("plain", 2, func(i int) *corev1.Pod { return gt.Pod(fmt.Sprintf("plain-%d", i)).GPU(1).Obj() })
	if got := placement.AntiAffinityBlocks(cluster.New(nodes, []*corev1.Pod{gt.Pod("x").Node("n-0").Obj()}), plain); got != nil {
		t.Errorf("blocks %v, want none", got)
	}
	self := gang("self", 2, func(i int) *corev1.Pod {
		return gt.Pod(fmt.Sprintf("self-%d", i)).GPU(1).Label("job", "self").AntiAffinity("job", "self", corev1.LabelHostname).Obj()
	})
	bound := self.Members[0].Pod.DeepCopy()
	bound.Spec.NodeName = "n-1"
	if got := placement.AntiAffinityBlocks(cluster.New(nodes, []*corev1.Pod{bound}), self); got != nil {
		t.Errorf("blocks %v by the group's own member, want none", got)
	}
}

// TestAntiAffinityBlocksByMember: the running pod excl-0 repels team=a from zone z1.
// Members that differ only in a label no running pod's terms read (a completion index)
// share one list; a member of another team is not blocked.
func TestAntiAffinityBlocksByMember(t *testing.T) {
	excl := gt.Pod("excl-0").Label("job", "excl").AntiAffinity("team", "a", corev1.LabelTopologyZone).Node("n-2").Obj()
	snap := cluster.New(zonedNodes(2), []*corev1.Pod{excl})
	g := gang("g", 3, func(i int) *corev1.Pod {
		team := []string{"a", "a", "b"}[i]
		return gt.Pod(fmt.Sprintf("g-%d", i)).GPU(1).Label("team", team).Label("index", fmt.Sprint(i)).Obj()
	})
	got := placement.AntiAffinityBlocks(snap, g)
	want := []placement.NodeBlock{{Node: "n-2", Pods: []string{"default/excl-0"}}, {Node: "n-3", Pods: []string{"default/excl-0"}}}
	if len(got) != 3 || !reflect.DeepEqual(got[0], want) || got[2] != nil {
		t.Fatalf("blocks %v, want %v for the members of team a and none for team b's", got, want)
	}
	if &got[0][0] != &got[1][0] {
		t.Errorf("the members of team a have lists of their own, want one shared")
	}
}
