package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

func nativePG(edit func(*schedulingv1beta1.PodGroup)) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: testNamespace}}
	edit(pg)
	return pg
}

func gang(minCount int32) func(*schedulingv1beta1.PodGroup) {
	return func(pg *schedulingv1beta1.PodGroup) {
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	}
}

func basic(pg *schedulingv1beta1.PodGroup) {
	pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
}

func and(edits ...func(*schedulingv1beta1.PodGroup)) func(*schedulingv1beta1.PodGroup) {
	return func(pg *schedulingv1beta1.PodGroup) {
		for _, e := range edits {
			e(pg)
		}
	}
}

func TestFromNative(t *testing.T) {
	tests := []struct {
		name      string
		pg        *schedulingv1beta1.PodGroup
		want      engine.GroupSpec
		wantBasic bool
	}{{
		name: "gang",
		pg:   nativePG(gang(8)),
		want: want(engine.Native, "train", 8, nil),
	}, {
		name:      "basic is no gang: one member at a time",
		pg:        nativePG(basic),
		want:      want(engine.Native, "train", 1, nil),
		wantBasic: true,
	}, {
		name: "gang minCount 0",
		pg:   nativePG(gang(0)),
		want: want(engine.Native, "train", 0, invalid("spec.schedulingPolicy.gang.minCount: 0: must be at least 1")),
	}, {
		name: "neither policy",
		pg:   nativePG(func(*schedulingv1beta1.PodGroup) {}),
		want: want(engine.Native, "train", 0, invalid("spec.schedulingPolicy: neither basic nor gang is set: expected exactly one")),
	}, {
		name: "both policies",
		pg:   nativePG(and(basic, gang(2))),
		want: want(engine.Native, "train", 0, invalid("spec.schedulingPolicy: both basic and gang are set: expected exactly one")),
	}, {
		name: "spec.priority",
		pg:   nativePG(and(gang(2), func(pg *schedulingv1beta1.PodGroup) { pg.Spec.Priority = ptr[int32](42) })),
		want: want(engine.Native, "train", 2, func(s *engine.GroupSpec) { s.Priority = 42 }),
	}, {
		name: "spec.priority wins over the class it was resolved from",
		pg: nativePG(and(gang(2), func(pg *schedulingv1beta1.PodGroup) {
			pg.Spec.Priority, pg.Spec.PriorityClassName = ptr[int32](7), "gone"
		})),
		want: want(engine.Native, "train", 2, func(s *engine.GroupSpec) { s.Priority = 7 }),
	}, {
		name: "priorityClassName",
		pg:   nativePG(and(basic, func(pg *schedulingv1beta1.PodGroup) { pg.Spec.PriorityClassName = "high" })),
		want: want(engine.Native, "train", 1, func(s *engine.GroupSpec) { s.Priority = 1000 }),
		// A basic group still carries its priority for each member.
		wantBasic: true,
	}, {
		name: "unknown priorityClassName",
		pg:   nativePG(and(gang(2), func(pg *schedulingv1beta1.PodGroup) { pg.Spec.PriorityClassName = "x" })),
		want: want(engine.Native, "train", 2, invalid(`spec.priorityClassName: "x": no such PriorityClass`)),
	}, {
		name: "topology constraint",
		pg:   nativePG(and(gang(2), topology("topology.kubernetes.io/rack"))),
		want: want(engine.Native, "train", 2, func(s *engine.GroupSpec) { s.Topology.Required = "topology.kubernetes.io/rack" }),
	}, {
		name: "topology annotation overrides the constraint",
		pg: nativePG(and(gang(2), topology("topology.kubernetes.io/rack"), func(pg *schedulingv1beta1.PodGroup) {
			pg.Annotations = map[string]string{musterv1alpha1.TopologyAnnotation: "topology.kubernetes.io/zone"}
		})),
		want: want(engine.Native, "train", 2, func(s *engine.GroupSpec) { s.Topology.Required = "topology.kubernetes.io/zone" }),
	}, {
		// Caught by FuzzFromNative (seed topology-not-a-label-key): the key was taken as it was.
		name: "topology key that is not a label key",
		pg:   nativePG(and(gang(2), topology("rack/zone/x"))),
		want: want(engine.Native, "train", 2, invalid(
			`spec.schedulingConstraints.topology[0].key: "rack/zone/x": expected a node label key such as "topology.kubernetes.io/zone"`)),
	}, {
		name: "two topology constraints",
		pg: nativePG(and(gang(2), func(pg *schedulingv1beta1.PodGroup) {
			pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
				Topology: []schedulingv1beta1.TopologyConstraint{{Key: "rack"}, {Key: "zone"}},
			}
		})),
		want: want(engine.Native, "train", 2, invalid("spec.schedulingConstraints.topology: 2 constraints: expected at most one")),
	}, {
		name: "per-group annotations",
		pg: nativePG(and(gang(2), func(pg *schedulingv1beta1.PodGroup) {
			pg.Annotations = map[string]string{musterv1alpha1.RecoveryTimeoutAnnotation: "2m", musterv1alpha1.MaxRetriesAnnotation: "-1"}
		})),
		want: want(engine.Native, "train", 2, func(s *engine.GroupSpec) {
			s.Policy.RecoveryTimeout = dur("2m")
			s.Invalid = []string{`metadata.annotations[muster.dev/max-retries]: "-1": expected a whole number of 0 or more`}
		}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FromNative(tt.pg, classes)); diff != "" {
				t.Errorf("FromNative (-want +got):\n%s", diff)
			}
			if got := IsBasic(tt.pg); got != tt.wantBasic {
				t.Errorf("IsBasic = %v, want %v", got, tt.wantBasic)
			}
		})
	}
}

func topology(key string) func(*schedulingv1beta1.PodGroup) {
	return func(pg *schedulingv1beta1.PodGroup) {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}},
		}
	}
}

// TestNativeClaims: a PodGroup's spec.resourceClaims are the group's claims, reserved
// for the PodGroup; an entry naming both a claim and a template is invalid, by field.
func TestNativeClaims(t *testing.T) {
	name, tmpl := "channel", "channels"
	pg := nativePG(and(gang(2), func(pg *schedulingv1beta1.PodGroup) {
		pg.UID = "uid-train"
		pg.Spec.ResourceClaims = []schedulingv1beta1.PodGroupResourceClaim{{Name: "channel", ResourceClaimName: &name}}
	}))
	spec := FromNative(pg, nil)
	if len(spec.GroupClaims) != 1 || spec.ClaimConsumer == nil || spec.ClaimConsumer.Resource != "podgroups" ||
		spec.ClaimConsumer.Name != "train" || spec.ClaimConsumer.UID != "uid-train" || len(spec.Invalid) > 0 {
		t.Fatalf("claims %+v, consumer %+v, invalid %v", spec.GroupClaims, spec.ClaimConsumer, spec.Invalid)
	}
	pg.Spec.ResourceClaims[0].ResourceClaimTemplateName = &tmpl
	spec = FromNative(pg, nil)
	want := `spec.resourceClaims[0] ("channel"): expected exactly one of resourceClaimName and resourceClaimTemplateName`
	if len(spec.Invalid) != 1 || spec.Invalid[0] != want || spec.GroupClaims != nil {
		t.Fatalf("invalid %q, claims %+v", spec.Invalid, spec.GroupClaims)
	}
}
