package kubefit

import (
	"context"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/muster-sched/muster/internal/cluster"
)

// DeviceNodes returns the nodes whose own devices could serve the requests of pod's
// unallocated claims that narrow their DeviceClass with selectors of their own: on each,
// every such request finds at least its count of devices (one, for a request of all of
// them) that both the class's selectors and its own select. The forecast counts devices
// per class (NodeDevices); where a node's devices of a class are alike, this keeps a
// member that asks for one kind of them (an H100 among a class of GPUs) to the nodes
// that have that kind. Each request is checked on its own, whether the devices are free
// is not, and requests of first-available alternatives are not read.
//
// It returns nil when pod has no such request, and otherwise a sorted list, empty when
// no node serves them. The nodes found for each request are kept in memo, which the
// caller empties when the ResourceSlices or DeviceClasses change.
func DeviceNodes(snap *cluster.Snapshot, pod *corev1.Pod, memo map[string][]string) []string {
	if !HasResourceClaims(pod) {
		return nil
	}
	claims, _ := ClaimsOf(snap, pod)
	var out []string
	for _, c := range claims {
		if c.Status.Allocation != nil {
			continue
		}
		for _, r := range c.Spec.Devices.Requests {
			if r.Exactly == nil || len(r.Exactly.Selectors) == 0 {
				continue
			}
			nodes := requestNodes(snap.Objects(), r.Exactly, memo)
			if out == nil {
				out = nodes
			} else {
				out = Narrow(out, nodes)
			}
		}
	}
	return out
}

// Narrow returns the names of nodes that are in sorted, a sorted list, as a new list in
// the order of nodes.
func Narrow(nodes, sorted []string) []string {
	out := make([]string, 0, min(len(nodes), len(sorted)))
	for _, n := range nodes {
		if _, ok := slices.BinarySearch(sorted, n); ok {
			out = append(out, n)
		}
	}
	return out
}

// requestNodes returns, sorted, the nodes with at least as many devices as request r
// asks for (one for a request of all) that r's class and r's own selectors select, as
// memo keeps them.
func requestNodes(objs *cluster.Objects, r *resourcev1.ExactDeviceRequest, memo map[string][]string) []string {
	need := max(r.Count, 1)
	if r.AllocationMode == resourcev1.DeviceAllocationModeAll {
		need = 1
	}
	key := requestKey(r.DeviceClassName, need, r.Selectors)
	if nodes, ok := memo[key]; ok {
		return nodes
	}
	nodes := []string{} // none, unless found
	if class := objs.DeviceClasses[r.DeviceClassName]; class != nil {
		ctx, count := context.Background(), map[string]int64{}
		eachNodeDevice(objs, func(node string, _ deviceKey, d dracel.Device) {
			if selectsAll(ctx, class.Spec.Selectors, d) && selectsAll(ctx, r.Selectors, d) {
				count[node]++
			}
		})
		for node, n := range count {
			if n >= need {
				nodes = append(nodes, node)
			}
		}
		slices.Sort(nodes)
	}
	memo[key] = nodes
	return nodes
}

// requestKey keys a request's nodes in memo by its class, the devices it needs and its
// selectors' expressions.
func requestKey(class string, need int64, sels []resourcev1.DeviceSelector) string {
	var b strings.Builder
	b.WriteString(class)
	b.WriteString("\x00")
	b.WriteString(strconv.FormatInt(need, 10))
	for _, s := range sels {
		if s.CEL != nil {
			b.WriteString("\x00")
			b.WriteString(s.CEL.Expression)
		}
	}
	return b.String()
}
