package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"
	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

// TestAnnotations covers every per-group annotation on a group object, well-formed and
// malformed. Pods carry them for Labels and Single groups: see TestFromLabels.
func TestAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        func(*engine.GroupSpec)
	}{{
		name: "all well-formed",
		annotations: map[string]string{
			musterv1alpha1.QueueAnnotation:                 "research",
			musterv1alpha1.StartTimeoutAnnotation:          "5m",
			musterv1alpha1.RecoveryTimeoutAnnotation:       "90s",
			musterv1alpha1.MaxRetriesAnnotation:            "0",
			musterv1alpha1.BackoffBaseAnnotation:           "10s",
			musterv1alpha1.BackoffMaxAnnotation:            "10s",
			musterv1alpha1.TopologyAnnotation:              "topology.kubernetes.io/zone",
			musterv1alpha1.TopologyPreferredAnnotation:     "example.com/rack",
			"unrelated.example.com/annotation":             "ignored",
			musterv1alpha1.CoschedulingPodGroupLabel + "x": "ignored",
		},
		want: func(s *engine.GroupSpec) {
			s.Queue = "research"
			s.Policy = engine.PolicyOverrides{
				StartTimeout: dur("5m"), RecoveryTimeout: dur("90s"), MaxRetries: ptr(0),
				BackoffBase: dur("10s"), BackoffMax: dur("10s"),
			}
			s.Topology.Required = "topology.kubernetes.io/zone"
			s.Topology.Preferred = "example.com/rack"
		},
	}, {
		name:        "start-timeout not a duration",
		annotations: map[string]string{musterv1alpha1.StartTimeoutAnnotation: "5 minutes"},
		want:        invalid(`metadata.annotations[muster.dev/start-timeout]: "5 minutes": expected a duration such as "30s" or "5m"`),
	}, {
		name:        "recovery-timeout zero",
		annotations: map[string]string{musterv1alpha1.RecoveryTimeoutAnnotation: "0s"},
		want:        invalid(`metadata.annotations[muster.dev/recovery-timeout]: "0s": expected a duration greater than 0`),
	}, {
		name:        "backoff-base negative",
		annotations: map[string]string{musterv1alpha1.BackoffBaseAnnotation: "-30s"},
		want:        invalid(`metadata.annotations[muster.dev/backoff-base]: "-30s": expected a duration greater than 0`),
	}, {
		name:        "backoff-max a bare number",
		annotations: map[string]string{musterv1alpha1.BackoffMaxAnnotation: "600"},
		want:        invalid(`metadata.annotations[muster.dev/backoff-max]: "600": expected a duration such as "30s" or "5m"`),
	}, {
		name: "backoff-max below backoff-base",
		annotations: map[string]string{
			musterv1alpha1.BackoffBaseAnnotation: "1m", musterv1alpha1.BackoffMaxAnnotation: "30s",
		},
		want: func(s *engine.GroupSpec) {
			s.Policy.BackoffBase, s.Policy.BackoffMax = dur("1m"), dur("30s")
			s.Invalid = []string{`metadata.annotations[muster.dev/backoff-max]: "30s": must be at least muster.dev/backoff-base (1m0s)`}
		},
	}, {
		name:        "max-retries negative",
		annotations: map[string]string{musterv1alpha1.MaxRetriesAnnotation: "-1"},
		want:        invalid(`metadata.annotations[muster.dev/max-retries]: "-1": expected a whole number of 0 or more`),
	}, {
		name:        "max-retries not a number",
		annotations: map[string]string{musterv1alpha1.MaxRetriesAnnotation: "three"},
		want:        invalid(`metadata.annotations[muster.dev/max-retries]: "three": expected a whole number of 0 or more`),
	}, {
		name:        "queue not a name",
		annotations: map[string]string{musterv1alpha1.QueueAnnotation: "Research Team"},
		want:        invalid(`metadata.annotations[muster.dev/queue]: "Research Team": expected a Queue name: lower-case letters, digits, '-' and '.'`),
	}, {
		name:        "topology not a label key",
		annotations: map[string]string{musterv1alpha1.TopologyAnnotation: "rack/zone/row"},
		want:        invalid(`metadata.annotations[muster.dev/topology]: "rack/zone/row": expected a node label key such as "topology.kubernetes.io/zone"`),
	}, {
		name:        "topology-preferred empty",
		annotations: map[string]string{musterv1alpha1.TopologyPreferredAnnotation: ""},
		want:        invalid(`metadata.annotations[muster.dev/topology-preferred]: "": expected a node label key such as "topology.kubernetes.io/zone"`),
	}, {
		name: "every malformed value is reported",
		annotations: map[string]string{
			musterv1alpha1.StartTimeoutAnnotation: "soon", musterv1alpha1.MaxRetriesAnnotation: "1.5",
		},
		want: invalid(
			`metadata.annotations[muster.dev/start-timeout]: "soon": expected a duration such as "30s" or "5m"`,
			`metadata.annotations[muster.dev/max-retries]: "1.5": expected a whole number of 0 or more`),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg := coschedulingPG(2, func(pg *spv1alpha1.PodGroup) { pg.Annotations = tt.annotations })
			if diff := cmp.Diff(want(engine.Coscheduling, "train", 2, tt.want), FromCoscheduling(pg, nil, nil)); diff != "" {
				t.Errorf("FromCoscheduling (-want +got):\n%s", diff)
			}
		})
	}
}

// invalid returns an edit that expects exactly problems.
func invalid(problems ...string) func(*engine.GroupSpec) {
	return func(s *engine.GroupSpec) { s.Invalid = problems }
}
