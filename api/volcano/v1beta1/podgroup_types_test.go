package v1beta1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// A Volcano PodGroup with every field muster reads, and a condition as Volcano writes it.
const manifest = `apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: llm
  namespace: team-b
spec:
  minMember: 4
  minTaskMember:
    master: 1
    worker: 3
  queue: research
  priorityClassName: high
  minResources:
    nvidia.com/gpu: 32
  networkTopology:
    mode: hard
    highestTierAllowed: 2
  preemptable: true
status:
  phase: Inqueue
  running: 3
  succeeded: 0
  failed: 1
  conditions:
  - type: Unschedulable
    status: "True"
    transitionID: 6f1c
    lastTransitionTime: "2026-11-29T10:00:00Z"
    reason: NotEnoughResources
    message: 3/4 tasks in gang unschedulable
`

func TestPodGroupDecodesStrictly(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	obj, _, err := decoder.Decode([]byte(manifest), nil, nil)
	if err != nil {
		t.Fatalf("decoding a Volcano PodGroup: %v", err)
	}
	got, ok := obj.(*PodGroup)
	if !ok {
		t.Fatalf("decoded a %T, want *PodGroup", obj)
	}
	tier := 2
	wantSpec := PodGroupSpec{
		MinMember:         4,
		MinTaskMember:     map[string]int32{"master": 1, "worker": 3},
		Queue:             "research",
		PriorityClassName: "high",
		MinResources:      &corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("32")},
		NetworkTopology:   &NetworkTopologySpec{Mode: HardNetworkTopologyMode, HighestTierAllowed: &tier},
		Preemptable:       true,
	}
	if diff := cmp.Diff(wantSpec, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	wantStatus := PodGroupStatus{
		Phase: PodGroupInqueue, Running: 3, Failed: 1,
		Conditions: []PodGroupCondition{{
			Type: PodGroupUnschedulableType, Status: corev1.ConditionTrue, TransitionID: "6f1c",
			LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)),
			Reason:             "NotEnoughResources", Message: "3/4 tasks in gang unschedulable",
		}},
	}
	if diff := cmp.Diff(wantStatus, got.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	copied := got.DeepCopy()
	copied.Spec.MinTaskMember["worker"] = 7
	(*copied.Spec.MinResources)["nvidia.com/gpu"] = resource.MustParse("1")
	if got.Spec.MinTaskMember["worker"] != 3 || (*got.Spec.MinResources).Name("nvidia.com/gpu", resource.DecimalSI).Value() != 32 {
		t.Errorf("DeepCopy shares maps with the original")
	}
}
