package kubefit

import (
	"slices"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	"github.com/muster-sched/muster/internal/cluster"
)

// The forecast leaves out the devices the allocator will not give a new claim: those
// with a taint of effect NoSchedule or NoExecute, their slice's own or a
// DeviceTaintRule's. A claim that tolerates the taint could have one: for it the
// forecast is late, never early.

// blocks reports whether a device taint keeps new claims off the device.
func blocks(t resourcev1.DeviceTaint) bool {
	return t.Effect == resourcev1.DeviceTaintEffectNoSchedule || t.Effect == resourcev1.DeviceTaintEffectNoExecute
}

// tainted is the tainted devices of one version of the objects, with their taints
// that keep new claims off.
type tainted struct {
	objs *cluster.Objects
	gen  uint64
	set  map[deviceKey][]resourcev1.DeviceTaint
}

// lastTainted keeps the set of the objects last asked about: the forecast asks for every
// member it reads, of one version of the objects.
var lastTainted struct {
	sync.Mutex
	tainted
}

// taintedDevices returns the devices of objs' slices that a taint keeps new claims off,
// each with those taints (its slice's own and DeviceTaintRules'), nil when none is. The
// set is shared: callers must not modify it.
func taintedDevices(objs *cluster.Objects) map[deviceKey][]resourcev1.DeviceTaint {
	lastTainted.Lock()
	defer lastTainted.Unlock()
	if lastTainted.objs == objs && lastTainted.gen == objs.DevicesGeneration() {
		return lastTainted.set
	}
	var set map[deviceKey][]resourcev1.DeviceTaint
	add := func(k deviceKey, t resourcev1.DeviceTaint) {
		if set == nil {
			set = map[deviceKey][]resourcev1.DeviceTaint{}
		}
		set[k] = append(set[k], t)
	}
	for _, s := range objs.Slices {
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			k := deviceKey{s.Spec.Driver, s.Spec.Pool.Name, d.Name}
			for _, t := range d.Taints {
				if blocks(t) {
					add(k, t)
				}
			}
			for _, r := range objs.DeviceTaintRules {
				if blocks(r.Spec.Taint) && selects(r.Spec.DeviceSelector, k) {
					add(k, r.Spec.Taint)
				}
			}
		}
	}
	lastTainted.tainted = tainted{objs: objs, gen: objs.DevicesGeneration(), set: set}
	return set
}

// tolerated reports whether one of requests' tolerations, each request's all
// together, tolerates every one of taints (resourceclaim.ToleratesTaint, as the
// allocator checks them).
func tolerated(requests [][]resourcev1.DeviceToleration, taints []resourcev1.DeviceTaint) bool {
	for _, tols := range requests {
		if !slices.ContainsFunc(taints, func(t resourcev1.DeviceTaint) bool {
			return !slices.ContainsFunc(tols, func(tol resourcev1.DeviceToleration) bool { return resourceclaim.ToleratesTaint(tol, t) })
		}) {
			return true
		}
	}
	return false
}

// selects reports whether a DeviceTaintRule's selector selects device k: each of
// driver, pool and device it names matches. A rule without a selector selects none.
func selects(sel *resourcev1.DeviceTaintSelector, k deviceKey) bool {
	return sel != nil && (sel.Driver == nil || *sel.Driver == k.driver) &&
		(sel.Pool == nil || *sel.Pool == k.pool) && (sel.Device == nil || *sel.Device == k.device)
}
