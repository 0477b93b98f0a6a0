package bench

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-sched/muster/internal/sandbox"
)

// ScenarioDRA is the throughput workload with GPUs as DRA devices: 1,000 nodes of 8
// devices of the sandbox's driver, and 500 gangs of 8 pods whose GPU is a one-device
// ResourceClaim made from a ResourceClaimTemplate, as a PyTorchJob's workers get theirs.
// The scheduler allocates every claim before it binds its pod: the kubelet starts no pod
// whose claims are not allocated to its node.
const ScenarioDRA = "dra"

// claimTemplate is the ResourceClaimTemplate of the DRA scenario, one per namespace, and
// claimEntry the pods' name for its claim.
const (
	claimTemplate = "one-gpu"
	claimEntry    = "gpu"
)

// Defaults of the DRA scenario: the throughput scenario's sizes.
const (
	DefaultDRANodes = 1000
	DefaultDRAGangs = 500
)

// draScenario is the DRA scenario on nodes nodes of 8 DRA GPUs, in NVLink domains of 8
// nodes, with gangs gangs.
func draScenario(nodes, gangs int) (Scenario, error) {
	if gangs < 1 {
		return Scenario{}, fmt.Errorf("dra gangs: expected at least 1, found %d", gangs)
	}
	c, err := sandbox.DRACluster(nodes, 8, max(nodes/8, 1))
	if err != nil {
		return Scenario{}, err
	}
	return Scenario{Name: ScenarioDRA, Cluster: c, Jobs: gangs, JobSize: 8, DRA: true}, nil
}

// draOf returns the DRA scenario of opts' sizes.
func draOf(opts Options) (Scenario, error) {
	return draScenario(cmp.Or(opts.DRANodes, DefaultDRANodes), cmp.Or(opts.DRAGangs, DefaultDRAGangs))
}

// useClaim makes p ask for its GPU through a claim made from claimTemplate instead of
// the extended resource.
func useClaim(p *corev1.Pod) {
	c := &p.Spec.Containers[0]
	delete(c.Resources.Requests, sandbox.ResourceGPU)
	delete(c.Resources.Limits, sandbox.ResourceGPU)
	tmpl := claimTemplate
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: claimEntry, ResourceClaimTemplateName: &tmpl}}
	c.Resources.Claims = []corev1.ResourceClaim{{Name: claimEntry}}
}

// createTemplate creates the DRA scenario's claim template in namespace ns.
func createTemplate(ctx context.Context, client kubernetes.Interface, ns string) error {
	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claimTemplate},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: claimEntry, Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: sandbox.DeviceClassGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
			}}},
		}}},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ResourceClaimTemplate %s/%s: %w", ns, claimTemplate, err)
	}
	return nil
}

// countAllocated counts the ResourceClaims of namespace ns that are allocated and
// reserved: after the last bind, every pod's claim must be, or the kubelet would not
// start it.
func countAllocated(ctx context.Context, client kubernetes.Interface, ns string) (int, error) {
	list, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing the ResourceClaims of %s: %w", ns, err)
	}
	n := 0
	for _, c := range list.Items {
		if c.Status.Allocation != nil && len(c.Status.ReservedFor) > 0 {
			n++
		}
	}
	return n, nil
}
