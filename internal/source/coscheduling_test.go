package source

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
)

func coschedulingPG(minMember int32, edit func(*spv1alpha1.PodGroup)) *spv1alpha1.PodGroup {
	pg := &spv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: testNamespace},
		Spec:       spv1alpha1.PodGroupSpec{MinMember: minMember},
	}
	if edit != nil {
		edit(pg)
	}
	return pg
}

func TestFromCoscheduling(t *testing.T) {
	member := label(musterv1alpha1.CoschedulingPodGroupLabel, "train")
	tests := []struct {
		name string
		pg   *spv1alpha1.PodGroup
		pods []*corev1.Pod
		want engine.GroupSpec
	}{{
		name: "minMember only",
		pg:   coschedulingPG(8, nil),
		want: want(engine.Coscheduling, "train", 8, nil),
	}, {
		name: "minMember 0",
		pg:   coschedulingPG(0, nil),
		want: want(engine.Coscheduling, "train", 0, func(s *engine.GroupSpec) {
			s.Invalid = []string{"spec.minMember: 0: must be at least 1"}
		}),
	}, {
		name: "minResources",
		pg: coschedulingPG(2, func(pg *spv1alpha1.PodGroup) {
			pg.Spec.MinResources = corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1500m"),
				"nvidia.com/gpu":   resource.MustParse("16"),
			}
		}),
		want: want(engine.Coscheduling, "train", 2, func(s *engine.GroupSpec) {
			s.MinResources = cluster.Resources{corev1.ResourceCPU: 1500, "nvidia.com/gpu": 16}
		}),
	}, {
		name: "scheduleTimeoutSeconds is the start timeout",
		pg: coschedulingPG(2, func(pg *spv1alpha1.PodGroup) {
			pg.Spec.ScheduleTimeoutSeconds = ptr[int32](90)
		}),
		want: want(engine.Coscheduling, "train", 2, func(s *engine.GroupSpec) {
			s.Policy.StartTimeout = ptr(90 * time.Second)
		}),
	}, {
		name: "scheduleTimeoutSeconds 0",
		pg: coschedulingPG(2, func(pg *spv1alpha1.PodGroup) {
			pg.Spec.ScheduleTimeoutSeconds = ptr[int32](0)
		}),
		want: want(engine.Coscheduling, "train", 2, func(s *engine.GroupSpec) {
			s.Invalid = []string{"spec.scheduleTimeoutSeconds: 0: must be at least 1"}
		}),
	}, {
		name: "start-timeout annotation overrides scheduleTimeoutSeconds, even a bad one",
		pg: coschedulingPG(2, func(pg *spv1alpha1.PodGroup) {
			pg.Spec.ScheduleTimeoutSeconds = ptr[int32](-5)
			pg.Annotations = map[string]string{musterv1alpha1.StartTimeoutAnnotation: "20m"}
		}),
		want: want(engine.Coscheduling, "train", 2, func(s *engine.GroupSpec) {
			s.Policy.StartTimeout = dur("20m")
		}),
	}, {
		name: "priority is the members' highest",
		pg:   coschedulingPG(3, nil),
		pods: []*corev1.Pod{pod("w-0", member, priority(5)), pod("w-1", member, priorityClass("high")), pod("w-2", member)},
		want: want(engine.Coscheduling, "train", 3, func(s *engine.GroupSpec) { s.Priority = 1000 }),
	}, {
		name: "a member whose class may not preempt keeps the group from preempting",
		pg:   coschedulingPG(2, nil),
		pods: []*corev1.Pod{pod("w-0", member, priorityClass("polite")), pod("w-1", member, priorityClass("high"))},
		want: want(engine.Coscheduling, "train", 2, func(s *engine.GroupSpec) { s.Priority, s.PreemptNever = 1000, true }),
	}, {
		name: "preemptionPolicy set on the pod by the API server",
		pg:   coschedulingPG(1, nil),
		pods: []*corev1.Pod{pod("w-0", member, priority(5), func(p *corev1.Pod) {
			never := corev1.PreemptNever
			p.Spec.PreemptionPolicy = &never
		})},
		want: want(engine.Coscheduling, "train", 1, func(s *engine.GroupSpec) { s.Priority, s.PreemptNever = 5, true }),
	}, {
		name: "negative member priority",
		pg:   coschedulingPG(2, nil),
		pods: []*corev1.Pod{pod("w-0", member, priorityClass("low")), pod("w-1", member, priorityClass("low"))},
		want: want(engine.Coscheduling, "train", 2, func(s *engine.GroupSpec) { s.Priority = -10 }),
	}, {
		name: "member with an unknown PriorityClass",
		pg:   coschedulingPG(1, nil),
		pods: []*corev1.Pod{pod("w-0", member, priorityClass("urgent"))},
		want: want(engine.Coscheduling, "train", 1, func(s *engine.GroupSpec) {
			s.Invalid = []string{`pod w-0: spec.priorityClassName: "urgent": no such PriorityClass`}
		}),
	}, {
		name: "per-group annotations",
		pg: coschedulingPG(4, func(pg *spv1alpha1.PodGroup) {
			pg.Annotations = map[string]string{musterv1alpha1.QueueAnnotation: "research", musterv1alpha1.TopologyAnnotation: "rack"}
		}),
		want: want(engine.Coscheduling, "train", 4, func(s *engine.GroupSpec) {
			s.Queue = "research"
			s.Topology.Required = "rack"
		}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromCoscheduling(tt.pg, tt.pods, classes)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromCoscheduling (-want +got):\n%s", diff)
			}
		})
	}
}
