package observe

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// cohortQueue creates a Queue of gpus GPUs in cohort explain.
func cohortQueue(t *testing.T, env *sandboxtest.Env, name, gpus string) {
	t.Helper()
	queue := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": musterv1alpha1.GroupVersion.String(), "kind": "Queue",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"cohort": "explain", "quota": map[string]any{"nvidia.com/gpu": gpus},
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "explain-cohort"}}},
	}}
	if _, err := env.Dynamic.Resource(musterv1alpha1.GroupVersion.WithResource("queues")).Create(context.Background(), queue, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestExplainReclaim: queue borrower (1 GPU) runs a group of 3 on queue lender's idle
// quota (3 GPUs); lender's group of 2 takes its quota back. While the borrowing group's
// pods stop (they take 5 s, and hold their nodes and quota until then), explain shows the
// lender's group waiting for the quota it reclaims and the group it evicts; once they are
// gone (and muster created them again, unbound), the evicted group's explanation says who
// reclaimed its quota.
func TestExplainReclaim(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "cohort", Count: 4, CPU: "16", Memory: "64Gi", GPUs: 1})
	cohortQueue(t, env, "borrower", "1")
	cohortQueue(t, env, "lender", "3")
	startMuster(t, env)
	ns := namespace(t, env, "explain-cohort")
	podGroup(t, env, ns, "wide", 3, map[string]string{musterv1alpha1.QueueAnnotation: "borrower"}, nil)
	createMembers(t, env, ns, "wide", 3, 1, func(_ int, b *sandboxtest.PodBuilder) { b.Annotate(kubelet.AnnotationStopAfter, "5s") })
	waitExplain(t, env, "podgroup/wide", ns, phase("Running"))

	podGroup(t, env, ns, "own", 2, map[string]string{musterv1alpha1.QueueAnnotation: "lender"}, nil)
	createMembers(t, env, ns, "own", 2, 1, nil)
	r := waitExplain(t, env, "podgroup/own", ns, func(f explain.Facts) bool {
		return phase("Queued")(f) && f.Lifecycle.WaitingKind == "QuotaExceeded" &&
			strings.Contains(f.Lifecycle.Waiting, "preempting 1 group(s)")
	})
	golden(t, "reclaiming", r, 4)
	r = waitExplain(t, env, "podgroup/wide", ns, func(f explain.Facts) bool {
		gone := f.Queue != nil && f.Queue.Status.Used.Name("nvidia.com/gpu", resource.DecimalSI).Value() == 0
		bound := 0
		for _, p := range f.Members {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return phase("Queued")(f) && gone && len(f.Members) == 3 && bound == 0
	})
	golden(t, "reclaimed", r, 4)
	waitExplain(t, env, "podgroup/own", ns, phase("Running"))
}
