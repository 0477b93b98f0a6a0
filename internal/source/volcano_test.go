package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	volcanov1beta1 "github.com/muster-sched/muster/api/volcano/v1beta1"
	"github.com/muster-sched/muster/internal/cluster"
	"github.com/muster-sched/muster/internal/engine"
)

func volcanoPG(minMember int32, edit func(*volcanov1beta1.PodGroup)) *volcanov1beta1.PodGroup {
	pg := &volcanov1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: testNamespace},
		Spec:       volcanov1beta1.PodGroupSpec{MinMember: minMember, Queue: volcanov1beta1.DefaultQueue},
	}
	if edit != nil {
		edit(pg)
	}
	return pg
}

func TestFromVolcano(t *testing.T) {
	tests := []struct {
		name string
		pg   *volcanov1beta1.PodGroup
		want engine.GroupSpec
	}{{
		name: "Volcano's default queue is muster's default",
		pg:   volcanoPG(4, nil),
		want: want(engine.Volcano, "train", 4, nil),
	}, {
		name: "no queue is muster's default",
		pg:   volcanoPG(4, func(pg *volcanov1beta1.PodGroup) { pg.Spec.Queue = "" }),
		want: want(engine.Volcano, "train", 4, nil),
	}, {
		name: "named queue",
		pg:   volcanoPG(4, func(pg *volcanov1beta1.PodGroup) { pg.Spec.Queue = "research" }),
		want: want(engine.Volcano, "train", 4, func(s *engine.GroupSpec) { s.Queue = "research" }),
	}, {
		// Caught by FuzzFromVolcano (seed queue-not-a-name): the group waited for a Queue that cannot exist.
		name: "spec.queue that is not a Queue name",
		pg:   volcanoPG(4, func(pg *volcanov1beta1.PodGroup) { pg.Spec.Queue = "Research Team" }),
		want: want(engine.Volcano, "train", 4, invalid(
			`spec.queue: "Research Team": expected a Queue name: lower-case letters, digits, '-' and '.'`)),
	}, {
		name: "queue annotation overrides spec.queue",
		pg: volcanoPG(4, func(pg *volcanov1beta1.PodGroup) {
			pg.Spec.Queue = "research"
			pg.Annotations = map[string]string{musterv1alpha1.QueueAnnotation: "batch"}
		}),
		want: want(engine.Volcano, "train", 4, func(s *engine.GroupSpec) { s.Queue = "batch" }),
	}, {
		name: "task minimums within minMember",
		pg: volcanoPG(4, func(pg *volcanov1beta1.PodGroup) {
			pg.Spec.MinTaskMember = map[string]int32{"ps": 1, "worker": 3, "evaluator": 0}
		}),
		want: want(engine.Volcano, "train", 4, func(s *engine.GroupSpec) { s.TaskMinimums = map[string]int{"ps": 1, "worker": 3} }),
	}, {
		// Volcano enforces them only then: a Job's minAvailable below its tasks' minimums
		// (by default their replicas) asks for minAvailable members of any task.
		name: "task minimums above minMember are not enforced",
		pg: volcanoPG(2, func(pg *volcanov1beta1.PodGroup) {
			pg.Spec.MinTaskMember = map[string]int32{"master": 2, "worker": 2}
		}),
		want: want(engine.Volcano, "train", 2, nil),
	}, {
		name: "negative task minimum",
		pg: volcanoPG(4, func(pg *volcanov1beta1.PodGroup) {
			pg.Spec.MinTaskMember = map[string]int32{"ps": -1, "worker": 2}
		}),
		want: want(engine.Volcano, "train", 4, func(s *engine.GroupSpec) {
			s.TaskMinimums = map[string]int{"worker": 2}
			s.Invalid = []string{`spec.minTaskMember["ps"]: -1: must not be negative`}
		}),
	}, {
		name: "minMember 0",
		pg:   volcanoPG(0, nil),
		want: want(engine.Volcano, "train", 0, invalid("spec.minMember: 0: must be at least 1")),
	}, {
		name: "minMember negative",
		pg:   volcanoPG(-2, nil),
		want: want(engine.Volcano, "train", -2, invalid("spec.minMember: -2: must be at least 1")),
	}, {
		name: "priorityClassName",
		pg:   volcanoPG(4, func(pg *volcanov1beta1.PodGroup) { pg.Spec.PriorityClassName = "high" }),
		want: want(engine.Volcano, "train", 4, func(s *engine.GroupSpec) { s.Priority = 1000 }),
	}, {
		name: "unknown priorityClassName",
		pg:   volcanoPG(4, func(pg *volcanov1beta1.PodGroup) { pg.Spec.PriorityClassName = "x" }),
		want: want(engine.Volcano, "train", 4, invalid(`spec.priorityClassName: "x": no such PriorityClass`)),
	}, {
		name: "minResources",
		pg: volcanoPG(4, func(pg *volcanov1beta1.PodGroup) {
			pg.Spec.MinResources = &corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("1Gi"), "nvidia.com/gpu": resource.MustParse("4"),
			}
		}),
		want: want(engine.Volcano, "train", 4, func(s *engine.GroupSpec) {
			s.MinResources = cluster.Resources{corev1.ResourceMemory: 1 << 30, "nvidia.com/gpu": 4}
		}),
	}, {
		name: "empty minResources is no minimum",
		pg:   volcanoPG(4, func(pg *volcanov1beta1.PodGroup) { pg.Spec.MinResources = &corev1.ResourceList{} }),
		want: want(engine.Volcano, "train", 4, nil),
	}, {
		name: "hard networkTopology cannot be honoured",
		pg: volcanoPG(4, func(pg *volcanov1beta1.PodGroup) {
			pg.Spec.NetworkTopology = &volcanov1beta1.NetworkTopologySpec{HighestTierAllowed: ptr(1)}
		}),
		want: want(engine.Volcano, "train", 4, invalid(`spec.networkTopology.mode: "hard": muster does not model `+
			`HyperNode tiers; set muster.dev/topology to a node label key instead`)),
	}, {
		name: "hard networkTopology replaced by the topology annotation",
		pg: volcanoPG(4, func(pg *volcanov1beta1.PodGroup) {
			pg.Spec.NetworkTopology = &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.HardNetworkTopologyMode}
			pg.Annotations = map[string]string{musterv1alpha1.TopologyAnnotation: "example.com/rack"}
		}),
		want: want(engine.Volcano, "train", 4, func(s *engine.GroupSpec) { s.Topology.Required = "example.com/rack" }),
	}, {
		name: "soft networkTopology is a preference",
		pg: volcanoPG(4, func(pg *volcanov1beta1.PodGroup) {
			pg.Spec.NetworkTopology = &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.SoftNetworkTopologyMode}
		}),
		want: want(engine.Volcano, "train", 4, nil),
	}, {
		name: "per-group annotations",
		pg: volcanoPG(4, func(pg *volcanov1beta1.PodGroup) {
			pg.Annotations = map[string]string{musterv1alpha1.MaxRetriesAnnotation: "5", musterv1alpha1.StartTimeoutAnnotation: "5 minutes"}
		}),
		want: want(engine.Volcano, "train", 4, func(s *engine.GroupSpec) {
			s.Policy.MaxRetries = ptr(5)
			s.Invalid = []string{`metadata.annotations[muster.dev/start-timeout]: "5 minutes": expected a duration such as "30s" or "5m"`}
		}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FromVolcano(tt.pg, classes)); diff != "" {
				t.Errorf("FromVolcano (-want +got):\n%s", diff)
			}
		})
	}
}
