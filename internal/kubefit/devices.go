package kubefit

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/muster-sched/muster/internal/cluster"
)

// The forecast counts DRA devices as it counts a node's GPUs: per node and DeviceClass,
// how many devices there are (NodeDevices), how many claims hold (ClaimedDevices), what
// a running member gives back when it ends (OwnDevices) and what a waiting one asks for
// (PendingDevices). Counts are by DeviceClass, the names a Queue's quota uses.

// selectors compiles DeviceClass selectors as the structured allocator does; compiled
// expressions are kept.
var selectors = dracel.NewCache(256, dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})

// NodeDevices returns, for each node with devices of its own (a ResourceSlice's
// spec.nodeName, or a device's nodeName), how many of its devices each DeviceClass
// selects: every CEL selector of the class matches the device. Only the newest
// generation of each pool counts. A selector that fails on a device does not select it.
// Partitions that consume counters their pool shares (the MIG partitions of a GPU)
// count only as many as the counters take together (mostTogether: exact for a class
// whose partitions consume alike, an upper bound otherwise); a device that allows
// several allocations counts as one. The counts are made once per version of the
// devices and shared (FreeDevices reads them too): callers do not modify them.
func NodeDevices(objs *cluster.Objects) map[string]cluster.Resources {
	if len(objs.Slices) == 0 || len(objs.DeviceClasses) == 0 {
		return nil
	}
	return classIndexOf(objs).total
}

// eachNodeDevice calls fn with each device of a single node, in the newest generation of
// its pool, that no taint keeps new claims off (see taintedDevices).
func eachNodeDevice(objs *cluster.Objects, fn func(node string, key deviceKey, d dracel.Device)) {
	eachNodeDeviceTainted(objs, false, func(node string, key deviceKey, d dracel.Device, _ []resourcev1.DeviceTaint) {
		fn(node, key, d)
	})
}

// eachNodeDeviceTainted is eachNodeDevice with, if withTainted, the tainted devices
// too, each with its taints that keep new claims off.
func eachNodeDeviceTainted(objs *cluster.Objects, withTainted bool, fn func(node string, key deviceKey, d dracel.Device, taints []resourcev1.DeviceTaint)) {
	newest := cluster.NewestPools(objs.Slices)
	tainted := taintedDevices(objs)
	for _, s := range objs.Slices {
		if s.Spec.Pool.Generation != newest[cluster.PoolOf(s)] {
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			key := deviceKey{s.Spec.Driver, s.Spec.Pool.Name, d.Name}
			if len(tainted[key]) > 0 && !withTainted {
				continue
			}
			if node := cluster.DeviceNode(s, d); node != "" {
				fn(node, key, dracel.Device{Driver: s.Spec.Driver, AllowMultipleAllocations: d.AllowMultipleAllocations,
					Attributes: d.Attributes, Capacity: d.Capacity}, tainted[key])
			}
		}
	}
}

// selectsAll reports whether every CEL selector of sels matches device d. A selector that
// does not compile or fails on d does not match it.
func selectsAll(ctx context.Context, sels []resourcev1.DeviceSelector, d dracel.Device) bool {
	for _, sel := range sels {
		if sel.CEL == nil {
			continue
		}
		compiled := selectors.GetOrCompile(sel.CEL.Expression)
		if compiled.Error != nil {
			return false
		}
		if ok, _, err := compiled.DeviceMatches(ctx, d); err != nil || !ok {
			return false
		}
	}
	return true
}

// ClaimedDevices returns, for each node, how many of its devices are allocated to
// ResourceClaims, per DeviceClass of the request each was allocated for; and of the
// partitions that consume shared counters (MIG), per class that selects them, how many
// the claims keep from being allocated, allocated or shut out by the counters the
// allocated ones consume (a 3g partition in use holds three 1g).
func ClaimedDevices(objs *cluster.Objects) map[string]cluster.Resources {
	if len(objs.ResourceClaims) == 0 || len(objs.Slices) == 0 {
		return nil
	}
	var idx *classIndex
	if len(objs.DeviceClasses) > 0 {
		idx = classIndexOf(objs)
	}
	nodeOf := devicesNodes(objs)
	out := map[string]cluster.Resources{}
	for _, c := range objs.ResourceClaims {
		a := c.Status.Allocation
		if a == nil {
			continue
		}
		classOf := requestClasses(c)
		for _, res := range a.Devices.Results {
			if idx != nil && idx.consumes[deviceKey{res.Driver, res.Pool, res.Device}] != nil {
				continue // counted below, by the counters
			}
			node := nodeOf[deviceKey{res.Driver, res.Pool, res.Device}]
			class := classOf[res.Request]
			if node == "" || class == "" {
				continue
			}
			if out[node] == nil {
				out[node] = cluster.Resources{}
			}
			out[node][corev1.ResourceName(class)]++
		}
	}
	if idx != nil && len(idx.partitions) > 0 {
		idx.partitionsHeld(objs, out)
	}
	return out
}

type deviceKey struct{ driver, pool, device string }

// devicesNodes maps each device of a single node that no taint keeps new claims off to
// the node: a tainted device is left out of the forecast's counts, allocated or not.
// The map is made once per version of the devices and shared: callers do not modify it.
func devicesNodes(objs *cluster.Objects) map[deviceKey]string {
	return objs.OfDevices("kubefit.devicesNodes", func() any { return mapDevicesNodes(objs) }).(map[deviceKey]string)
}

// mapDevicesNodes makes the map devicesNodes returns.
func mapDevicesNodes(objs *cluster.Objects) map[deviceKey]string {
	out := map[deviceKey]string{}
	tainted := taintedDevices(objs)
	for _, s := range objs.Slices {
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if len(tainted[deviceKey{s.Spec.Driver, s.Spec.Pool.Name, d.Name}]) > 0 {
				continue
			}
			if node := cluster.DeviceNode(s, d); node != "" {
				out[deviceKey{s.Spec.Driver, s.Spec.Pool.Name, d.Name}] = node
			}
		}
	}
	return out
}

// requestClasses maps each request of claim c, and each subrequest (as
// "request/subrequest", the name an allocation result gives), to the DeviceClass it
// names.
func requestClasses(c *resourcev1.ResourceClaim) map[string]string {
	out := map[string]string{}
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly != nil {
			out[r.Name] = r.Exactly.DeviceClassName
			continue
		}
		for _, sr := range r.FirstAvailable {
			out[r.Name+"/"+sr.Name] = sr.DeviceClassName
		}
	}
	return out
}

// OwnDevices is what pod's ResourceClaims that are allocated and reserved for it alone
// hold, per DeviceClass, with the claim made for its extended resources backed by DRA:
// the devices that come back when it ends. A claim shared with other consumers comes
// back only when the last of them ends, and is not counted; nor is a tainted device,
// which does not come back for new claims (see taintedDevices). Partitions that
// consume shared counters (MIG) give back, to every class whose partitions share them,
// as many as the counters they free take (see ClaimedDevices): a 3g partition, one 3g
// and three 1g.
func OwnDevices(snap *cluster.Snapshot, pod *corev1.Pod) cluster.Resources {
	if !HoldsDevices(pod) {
		return nil
	}
	claims := HeldClaims(snap, pod)
	var out cluster.Resources
	objs := snap.Objects()
	tainted := taintedDevices(objs)
	var idx *classIndex
	if len(objs.DeviceClasses) > 0 && len(objs.Slices) > 0 {
		idx = classIndexOf(objs)
	}
	var parts []deviceKey
	for _, c := range claims {
		a := c.Status.Allocation
		if a == nil || !reservedForOnly(c, pod) {
			continue
		}
		classOf := requestClasses(c)
		for _, res := range a.Devices.Results {
			key := deviceKey{res.Driver, res.Pool, res.Device}
			if idx != nil && idx.consumes[key] != nil {
				parts = append(parts, key) // a tainted one's counters come back too
				continue
			}
			if len(tainted[key]) > 0 {
				continue
			}
			if class := classOf[res.Request]; class != "" {
				if out == nil {
					out = cluster.Resources{}
				}
				out[corev1.ResourceName(class)]++
			}
		}
	}
	if len(parts) > 0 {
		freed := idx.freedBy(objs, parts)
		if out == nil && len(freed) > 0 {
			out = cluster.Resources{}
		}
		out.Add(freed)
	}
	return out
}

// reservedForOnly reports whether claim c is reserved for pod and no other consumer, or
// for none yet.
func reservedForOnly(c *resourcev1.ResourceClaim, pod *corev1.Pod) bool {
	r := c.Status.ReservedFor
	return len(r) == 0 || len(r) == 1 && r[0].UID == pod.UID
}

// PendingDevices is what pod's ResourceClaims not allocated yet ask for, per
// DeviceClass, counted as DeviceCounts counts them but for a request of all matching
// devices: it takes every device of its class on the node it is allocated on, and
// counts fewest[class] (see FewestDevices), one when that is not set. A request with
// alternatives counts its alt-th (from 0; its last if it has fewer, see Alternatives).
// Claims in seen are skipped, and the pod's are added to it: a claim shared by members
// is counted once.
func PendingDevices(snap *cluster.Snapshot, pod *corev1.Pod, seen map[string]bool, fewest cluster.Resources, alt int) cluster.Resources {
	return deviceCounts(snap, pod, seen, false, fewest, alt)
}

// FewestDevices returns, per DeviceClass, the fewest devices a node with any of the
// class has, given NodeDevices' counts: what a request of all of a class's devices on
// one node takes at least. It is exact where the nodes that have the class have the
// same number of its devices, and a lower bound elsewhere.
func FewestDevices(nodes map[string]cluster.Resources) cluster.Resources {
	var out cluster.Resources
	for _, r := range nodes {
		for class, n := range r {
			if n <= 0 {
				continue
			}
			if out == nil {
				out = cluster.Resources{}
			}
			if cur, ok := out[class]; !ok || n < cur {
				out[class] = n
			}
		}
	}
	return out
}
