package kubelet

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// rejection is why a pod does not fit on its node, in the kubelet's words.
type rejection struct {
	// Reason is "OutOf" + the resource name, e.g. OutOfnvidia.com/gpu.
	Reason string
	// Message names the resource, the request, what is in use and the allocatable.
	Message string
}

// fit checks, as the kubelet's admission does, that a pod requesting req fits on a
// node with allocatable alloc where pods pods already run using used. Resources are
// checked in name order after the pod count, so the answer is deterministic.
func fit(req, used, alloc v1.ResourceList, pods int) *rejection {
	if maxPods, ok := alloc[v1.ResourcePods]; ok && int64(pods+1) > maxPods.Value() {
		return &rejection{
			Reason: ReasonOutOfPrefix + string(v1.ResourcePods),
			Message: fmt.Sprintf("Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d",
				pods, maxPods.Value()),
		}
	}
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, n := range names {
		name := v1.ResourceName(n)
		want := req[name]
		if want.IsZero() || name == v1.ResourcePods {
			continue
		}
		have := alloc[name]
		inUse := used[name]
		free := have.DeepCopy()
		free.Sub(inUse)
		if want.Cmp(free) > 0 {
			return &rejection{
				Reason: ReasonOutOfPrefix + n,
				Message: fmt.Sprintf("Pod was rejected: Node didn't have enough resource: %s, requested: %s, used: %s, capacity: %s",
					n, want.String(), inUse.String(), have.String()),
			}
		}
	}
	return nil
}

// podRequests is the effective request of pod: containers, init containers and
// overhead, with upstream semantics, but for the extended resources the scheduler
// allocated as DRA devices (status.extendedResourceClaimStatus), which the kubelet
// admits with the pod's claims, not against the node's allocatable.
func podRequests(pod *v1.Pod) v1.ResourceList {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		for _, m := range s.RequestMappings {
			delete(req, v1.ResourceName(m.ResourceName))
		}
	}
	return req
}

// addTo adds r into sum.
func addTo(sum, r v1.ResourceList) {
	for name, q := range r {
		cur := sum[name]
		cur.Add(q)
		sum[name] = cur
	}
}
