package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

func TestFromLabels(t *testing.T) {
	member := label(musterv1alpha1.GroupLabel, "plain")
	minMember := func(v string) podOpt { return annotate(musterv1alpha1.MinMemberAnnotation, v) }
	joined := func(ps ...[]*corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for _, p := range ps {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
		want engine.GroupSpec
	}{{
		name: "pods agree",
		pods: pods("w", 3, member, minMember("4")),
		want: want(engine.Labels, "plain", 4, nil),
	}, {
		name: "pods without the annotation do not count",
		pods: joined(pods("w", 2, member, minMember("3")), []*corev1.Pod{pod("launcher", member)}),
		want: want(engine.Labels, "plain", 3, nil),
	}, {
		name: "pods disagree",
		pods: joined(pods("w", 2, member, minMember("8")), []*corev1.Pod{pod("x", member, minMember("4"))}),
		want: want(engine.Labels, "plain", 0, invalid(
			`metadata.annotations[muster.dev/min-member]: members disagree: "4" on x; "8" on w-0, w-1`)),
	}, {
		name: "many disagreeing pods are summarised",
		pods: joined(pods("w", 7, member, minMember("8")), []*corev1.Pod{pod("x", member, minMember("9"))}),
		want: want(engine.Labels, "plain", 0, invalid(
			`metadata.annotations[muster.dev/min-member]: members disagree: "8" on w-0, w-1, w-2, w-3, w-4 and 2 more; "9" on x`)),
	}, {
		name: "missing",
		pods: pods("w", 2, member),
		want: want(engine.Labels, "plain", 0, invalid(
			`metadata.annotations[muster.dev/min-member]: not set on any member: expected a whole number of 1 or more`)),
	}, {
		name: "not a number",
		pods: pods("w", 2, member, minMember("eight")),
		want: want(engine.Labels, "plain", 0, invalid(
			`metadata.annotations[muster.dev/min-member]: "eight": expected a whole number of 1 or more`)),
	}, {
		name: "zero",
		pods: pods("w", 2, member, minMember("0")),
		want: want(engine.Labels, "plain", 0, invalid(
			`metadata.annotations[muster.dev/min-member]: "0": expected a whole number of 1 or more`)),
	}, {
		name: "per-group annotations from the pods",
		pods: pods("w", 2, member, minMember("2"), annotate(musterv1alpha1.QueueAnnotation, "research"),
			annotate(musterv1alpha1.BackoffMaxAnnotation, "10m"), annotate(musterv1alpha1.TopologyPreferredAnnotation, "example.com/rack")),
		want: want(engine.Labels, "plain", 2, func(s *engine.GroupSpec) {
			s.Queue = "research"
			s.Policy.BackoffMax = dur("10m")
			s.Topology.Preferred = "example.com/rack"
		}),
	}, {
		name: "pods disagree on a per-group annotation",
		pods: []*corev1.Pod{
			pod("w-0", member, minMember("2"), annotate(musterv1alpha1.StartTimeoutAnnotation, "5m")),
			pod("w-1", member, minMember("2"), annotate(musterv1alpha1.StartTimeoutAnnotation, "10m")),
		},
		want: want(engine.Labels, "plain", 2, invalid(
			`metadata.annotations[muster.dev/start-timeout]: members disagree: "10m" on w-1; "5m" on w-0`)),
	}, {
		name: "malformed per-group annotation on the pods",
		pods: pods("w", 2, member, minMember("2"), annotate(musterv1alpha1.MaxRetriesAnnotation, "-1")),
		want: want(engine.Labels, "plain", 2, invalid(
			`metadata.annotations[muster.dev/max-retries]: "-1": expected a whole number of 0 or more`)),
	}, {
		name: "priority is the pods' highest",
		pods: []*corev1.Pod{pod("w-0", member, minMember("2"), priority(-3)), pod("w-1", member, minMember("2"), priority(-1))},
		want: want(engine.Labels, "plain", 2, func(s *engine.GroupSpec) { s.Priority = -1 }),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromLabels(Ref{engine.Labels, testNamespace, "plain"}, tt.pods, classes)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromLabels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromSingle(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want engine.GroupSpec
	}{{
		name: "plain pod",
		pod:  pod("solo"),
		want: want(engine.Single, "solo", 1, nil),
	}, {
		name: "min-member 1 is harmless",
		pod:  pod("solo", annotate(musterv1alpha1.MinMemberAnnotation, "1")),
		want: want(engine.Single, "solo", 1, nil),
	}, {
		name: "min-member without a group label",
		pod:  pod("solo", annotate(musterv1alpha1.MinMemberAnnotation, "4")),
		want: want(engine.Single, "solo", 1, invalid(
			`metadata.annotations[muster.dev/min-member]: "4": the pod has no muster.dev/group label, so it is a group of one`)),
	}, {
		name: "annotations and priority",
		pod: pod("solo", priorityClass("high"), annotate(musterv1alpha1.QueueAnnotation, "research"),
			annotate(musterv1alpha1.StartTimeoutAnnotation, "1h"), annotate(musterv1alpha1.BackoffBaseAnnotation, "5 minutes")),
		want: want(engine.Single, "solo", 1, func(s *engine.GroupSpec) {
			s.Priority = 1000
			s.Queue = "research"
			s.Policy.StartTimeout = dur("1h")
			s.Invalid = []string{`metadata.annotations[muster.dev/backoff-base]: "5 minutes": expected a duration such as "30s" or "5m"`}
		}),
	}, {
		name: "unknown PriorityClass",
		pod:  pod("solo", priorityClass("x")),
		want: want(engine.Single, "solo", 1, invalid(`pod solo: spec.priorityClassName: "x": no such PriorityClass`)),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FromSingle(tt.pod, classes)); diff != "" {
				t.Errorf("FromSingle (-want +got):\n%s", diff)
			}
		})
	}
}
