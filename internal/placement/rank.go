package placement

import (
	"cmp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/kubefit"
)

// rank sets the amounts that order c for shape s: for members that ask for DRA devices
// (byDevices), the node's free devices, then its free cpu; else the free scarce
// resource when s asks for it; either way the most allocated node comes first and
// whole nodes stay free for big gangs. Otherwise the node's allocatable scarce resource,
// then its free cpu, so that members that do not need the scarce resource go where
// there is none of it.
func (p *placer) rank(s *shape, c candidate) candidate {
	switch {
	case p.byDevices(s):
		c.first, c.second = p.freeDevices(s, c.node), c.node.FreeOf(p.cpuID)
	case s.req[p.scarce] > 0:
		c.first = c.node.FreeOf(p.scarceID)
	default:
		c.first, c.second = c.node.Allocatable[p.scarce], c.node.FreeOf(p.cpuID)
	}
	return c
}

// byDevices reports whether s's members are ranked by the nodes' free devices: they ask
// for DRA devices, and the group packs no extended resource a device plugin serves
// (placement's scarce resource is cpu then).
func (p *placer) byDevices(s *shape) bool {
	return (s.devices || s.dra != nil) && p.scarce == corev1.ResourceCPU
}

// freeDevices is what of n's devices is free for members of s: its free amount of an
// extended resource s asks for that n has in its allocatable (a device plugin serves
// it), else n's devices of the classes s asks for that no taint keeps off (but those
// its claims tolerate) and no claim has allocated (kubefit.FreeDevices).
func (p *placer) freeDevices(s *shape, n *cluster.NodeInfo) int64 {
	for i, name := range s.names {
		if s.dra != nil && s.dra[i] && !s.delegated(n, i) {
			return n.Free(name)
		}
	}
	if !s.classesRead {
		if s.devices {
			s.classes = append(s.classes, kubefit.DeviceClassesOf(p.snap, s.pod)...)
			s.tolerations = kubefit.DeviceTolerationsOf(p.snap, s.pod)
		}
		s.classesRead = true
	}
	return kubefit.FreeDevices(p.snap.Objects(), n.Name(), s.classes, s.tolerations)
}

// better orders ranked candidates: negative when a is the better node.
func better(a, b candidate) int {
	if c := byAmounts(a, b); c != 0 {
		return c
	}
	return strings.Compare(a.node.Name(), b.node.Name())
}

// byAmounts is better without the final comparison of names.
func byAmounts(a, b candidate) int {
	if c := cmp.Compare(a.first, b.first); c != 0 {
		return c
	}
	return cmp.Compare(a.second, b.second)
}
