package engine

import (
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
	"github.com/muster-sched/muster/internal/placement"
)

// deviceCharges are what the members' DRA claims charge to quota, by member (nil when
// none has claims); a claim shared by members is charged to the first.
func (e *Engine) deviceCharges(members []placement.Member) map[string]cluster.Resources {
	var out map[string]cluster.Resources
	seen := map[string]bool{}
	for _, m := range members {
		if d := kubefit.DeviceCounts(e.snap, m.Pod, seen); d != nil {
			if out == nil {
				out = map[string]cluster.Resources{}
			}
			out[m.Name] = d
		}
	}
	return out
}

// devicesHeld is what the claims of g's members that hold a node charge to quota.
func (e *Engine) devicesHeld(g *group) cluster.Resources {
	var out cluster.Resources
	seen := map[string]bool{}
	for _, key := range g.memberKeys() {
		p := g.members[key]
		if terminal(p) || g.nodeOf(key, p) == "" || !kubefit.HasResourceClaims(p) {
			continue
		}
		if d := kubefit.DeviceCounts(e.snap, p, seen); d != nil {
			if out == nil {
				out = cluster.Resources{}
			}
			out.Add(d)
		}
	}
	return out
}
