// Package cluster is muster's point-in-time model of a cluster's nodes and of what is bound
// to them. It is the input of every placement decision. It does no I/O: the controller
// builds a Snapshot from informers, the simulator from its own events.
package cluster

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resources is a resource vector in canonical integer units: millicores for cpu, bytes for
// memory and storage, and a plain count for everything else (pods, nvidia.com/gpu).
// A missing name means zero.
type Resources map[corev1.ResourceName]int64

// FromList converts a Kubernetes ResourceList to canonical units.
func FromList(list corev1.ResourceList) Resources {
	r := make(Resources, len(list))
	for name, q := range list {
		r[name] = canonical(name, q)
	}
	return r
}

func canonical(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Quantity converts one canonical amount back to a Kubernetes quantity.
func Quantity(name corev1.ResourceName, v int64) resource.Quantity {
	switch name {
	case corev1.ResourceCPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return *resource.NewQuantity(v, resource.BinarySI)
	default:
		return *resource.NewQuantity(v, resource.DecimalSI)
	}
}

// List converts r to a Kubernetes ResourceList, omitting zero amounts.
func (r Resources) List() corev1.ResourceList {
	out := make(corev1.ResourceList, len(r))
	for name, v := range r {
		if v != 0 {
			out[name] = Quantity(name, v)
		}
	}
	return out
}

// Clone returns a copy of r.
func (r Resources) Clone() Resources {
	out := make(Resources, len(r))
	for k, v := range r {
		out[k] = v
	}
	return out
}

// Add adds o to r in place.
func (r Resources) Add(o Resources) {
	for k, v := range o {
		r[k] += v
	}
}

// Sub subtracts o from r in place.
func (r Resources) Sub(o Resources) {
	for k, v := range o {
		r[k] -= v
	}
}

// Scaled returns r multiplied by n.
func (r Resources) Scaled(n int64) Resources {
	out := make(Resources, len(r))
	for k, v := range r {
		out[k] = v * n
	}
	return out
}

// Names returns the resource names with a non-zero amount, sorted.
func (r Resources) Names() []corev1.ResourceName {
	return r.appendNames(make([]corev1.ResourceName, 0, len(r)))
}

// appendNames appends Names to names.
func (r Resources) appendNames(names []corev1.ResourceName) []corev1.ResourceName {
	start := len(names)
	for k, v := range r {
		if v != 0 {
			names = append(names, k)
		}
	}
	slices.Sort(names[start:])
	return names
}

// IsZero reports whether every amount in r is zero.
func (r Resources) IsZero() bool {
	for _, v := range r {
		if v != 0 {
			return false
		}
	}
	return true
}

// Format renders one amount of a resource the way kubectl would ("500m", "8Gi", "4").
func Format(name corev1.ResourceName, v int64) string {
	// Counts below a thousand, and whole cpus below a thousand, render as the integer:
	// messages render them often, and a Quantity's String allocates.
	switch name {
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
	case corev1.ResourceCPU:
		if v%1000 == 0 && v > -1000_000 && v < 1000_000 {
			return strconv.FormatInt(v/1000, 10)
		}
	default:
		if v > -1000 && v < 1000 {
			return strconv.FormatInt(v, 10)
		}
	}
	q := Quantity(name, v)
	return q.String()
}

// String renders r as "{cpu: 4, nvidia.com/gpu: 1}", with names sorted.
func (r Resources) String() string {
	var b strings.Builder
	r.Render(&b)
	return b.String()
}

// Render writes String's text to b.
func (r Resources) Render(b *strings.Builder) {
	// Requests name a few resources: their names are sorted on the stack.
	var buf [8]corev1.ResourceName
	b.WriteByte('{')
	for i, name := range r.appendNames(buf[:0]) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(name))
		b.WriteString(": ")
		b.WriteString(Format(name, r[name]))
	}
	b.WriteByte('}')
}

// IsExtended reports whether name is an extended resource such as nvidia.com/gpu, as
// opposed to cpu, memory, storage and the pod count.
func IsExtended(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceStorage:
		return false
	}
	return !strings.HasPrefix(string(name), "hugepages-")
}

// PodRequests returns what a pod asks of a node, with upstream semantics (init containers,
// sidecars, pod overhead and pod-level resources, through k8s.io/component-helpers), plus
// one unit of the "pods" resource.
func PodRequests(pod *corev1.Pod) Resources {
	r := FromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	r[corev1.ResourcePods] = 1
	return r
}

// Equal reports whether r and o hold the same amounts, treating missing names as zero.
func (r Resources) Equal(o Resources) bool {
	for k, v := range r {
		if o[k] != v {
			return false
		}
	}
	for k, v := range o {
		if r[k] != v {
			return false
		}
	}
	return true
}
