package source

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

// TestSilentCases: what the controller says about a pod whose group it cannot schedule
// for a reason only the pod shows, each message naming the field and the value.
func TestSilentCases(t *testing.T) {
	both := pod("w-0", label(musterv1alpha1.CoschedulingPodGroupLabel, "a"), annotate(musterv1alpha1.VolcanoGroupNameAnnotation, "b"))
	if got := Claims(both); len(got) != 2 || got[0].Source != engine.Coscheduling || got[1].Source != engine.Volcano {
		t.Errorf("Claims of a pod naming two groups: expected Coscheduling a then Volcano b, found %v", got)
	}
	for _, tc := range []struct {
		name string
		got  string
		want []string // substrings; none means ""
	}{
		{"ambiguous", Ambiguous(both), []string{"2 APIs", `joins Coscheduling "a"`, `ignores Volcano "b"`}},
		{"one group is not ambiguous", Ambiguous(pod("w-1", label(musterv1alpha1.GroupLabel, "g"))), nil},
		{"a Volcano name with a slash", InvalidName(Ref{Source: engine.Volcano, Namespace: testNamespace, Name: "team/job"}),
			[]string{"metadata.annotations[scheduling.k8s.io/group-name]", `"team/job"`, "not a group name"}},
		{"a valid name", InvalidName(Ref{Source: engine.Volcano, Namespace: testNamespace, Name: "job"}), nil},
		{"not found", NotFound(Ref{Source: engine.Coscheduling, Namespace: testNamespace, Name: "pg"}, "scheduling.x-k8s.io/v1alpha1", true),
			[]string{`"pg"`, "PodGroup ml/pg (scheduling.x-k8s.io/v1alpha1) does not exist"}},
		{"not served", NotFound(Ref{Source: engine.Volcano, Namespace: testNamespace, Name: "pg"}, "scheduling.volcano.sh/v1beta1", false),
			[]string{"scheduling.volcano.sh/v1beta1, which the cluster does not serve"}},
		{"unowned, missing", Unowned(engine.GroupSpec{Source: engine.Coscheduling, MinMember: 1000000000}, 2, []*corev1.Pod{pod("w-0")}),
			[]string{"nothing will create the 999999998 missing", "spec.minMember"}},
		{"owned", Unowned(engine.GroupSpec{Source: engine.Coscheduling, MinMember: 3}, 2, []*corev1.Pod{pod("w-0", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", UID: "u", Controller: ptrTo(true)}}
		})}), nil},
		{"unowned, complete", Unowned(engine.GroupSpec{Source: engine.Coscheduling, MinMember: 2}, 2, []*corev1.Pod{pod("w-0")}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.want) == 0 && tc.got != "" {
				t.Fatalf("expected nothing to say, found %q", tc.got)
			}
			for _, w := range tc.want {
				if !strings.Contains(tc.got, w) {
					t.Errorf("expected %q in %q", w, tc.got)
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
