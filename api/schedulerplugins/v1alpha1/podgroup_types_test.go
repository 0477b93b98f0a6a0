package v1alpha1

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

// A PodGroup as the Kubeflow training-operator writes it, with every status field set.
const manifest = `apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: mnist
  namespace: team-a
spec:
  minMember: 8
  minResources:
    nvidia.com/gpu: "8"
    cpu: 16
  scheduleTimeoutSeconds: 120
status:
  phase: Scheduling
  occupiedBy: 0b6e6c3a
  running: 2
  succeeded: 1
  failed: 1
  scheduleStartTime: "2026-11-29T10:00:00Z"
`

func TestPodGroupDecodesStrictly(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	obj, gvk, err := decoder.Decode([]byte(manifest), nil, nil)
	if err != nil {
		t.Fatalf("decoding an upstream-shaped PodGroup: %v", err)
	}
	if *gvk != GroupVersion.WithKind("PodGroup") {
		t.Errorf("decoded kind %v, want %v", gvk, GroupVersion.WithKind("PodGroup"))
	}
	got, ok := obj.(*PodGroup)
	if !ok {
		t.Fatalf("decoded a %T, want *PodGroup", obj)
	}
	want := PodGroupSpec{
		MinMember: 8,
		MinResources: corev1.ResourceList{
			"nvidia.com/gpu":   resource.MustParse("8"),
			corev1.ResourceCPU: resource.MustParse("16"),
		},
		ScheduleTimeoutSeconds: ptr[int32](120),
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	wantStatus := PodGroupStatus{
		Phase: PodGroupScheduling, OccupiedBy: "0b6e6c3a", Running: 2, Succeeded: 1, Failed: 1,
		ScheduleStartTime: metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)),
	}
	if diff := cmp.Diff(wantStatus, got.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if copied := got.DeepCopy(); !cmp.Equal(got, copied) {
		t.Errorf("DeepCopy differs from the original:\n%s", cmp.Diff(got, copied))
	}

	if _, _, err := decoder.Decode([]byte(manifest+"  minMembers: 3\n"), nil, nil); err == nil {
		t.Errorf("decoding a PodGroup with unknown field status.minMembers succeeded, want a strict error")
	}
}

func ptr[T any](v T) *T { return &v }
