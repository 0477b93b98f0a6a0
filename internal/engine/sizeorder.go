package engine

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/placement"
)

// SizeOrder orders a queue by what its groups are expected to hold: a group's place is
// its queue time plus a handicap of PerDeviceHour for each device-hour it is expected
// to hold (its members' devices, or cpu cores when they ask for none, times its
// expected run time), at most Max. A group whose run time is unknown gets Max.
//
// Short, small groups then go ahead of long, large ones queued a little earlier, which
// shortens most waits (shortest job first), while no group is ever passed by one
// queued more than Max after it: the handicap bounds the unfairness, where a pure
// shortest-first order would starve large groups. Priority, and requeued groups coming
// after fresh ones, come first as before; the starvation threshold counts from the
// queue time, not the handicap.
type SizeOrder struct {
	PerDeviceHour time.Duration
	Max           time.Duration
}

// handicap returns g's handicap for members, the members it queues.
func (e *Engine) handicap(g *group, members []placement.Member) time.Duration {
	o := e.cfg.SizeOrder
	if o.PerDeviceHour <= 0 || o.Max <= 0 {
		return 0
	}
	d, _ := e.runtimeOf(g)
	if d <= 0 {
		return o.Max
	}
	units := deviceUnits(members, g.spec.MinMember)
	h := time.Duration(float64(o.PerDeviceHour) * units * d.Hours())
	return min(max(h, 0), o.Max)
}

// deviceUnits counts what the first minMember members ask for: their extended
// resources (GPUs, typically), or cpu cores when they ask for none.
func deviceUnits(members []placement.Member, minMember int) float64 {
	var devices, millicores int64
	for _, m := range members[:min(max(minMember, 1), len(members))] {
		req := m.Requests
		if req == nil {
			req = cluster.PodRequests(m.Pod)
		}
		for name, v := range req {
			switch {
			case cluster.IsExtended(name):
				devices += v
			case name == corev1.ResourceCPU:
				millicores += v
			}
		}
	}
	if devices > 0 {
		return float64(devices)
	}
	return float64(millicores) / 1000
}
