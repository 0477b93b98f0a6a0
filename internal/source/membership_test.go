package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

func TestGroupOf(t *testing.T) {
	native := schedulingGroup("native-pg")
	cosched := label(musterv1alpha1.CoschedulingPodGroupLabel, "cosched-pg")
	volcano := annotate(musterv1alpha1.VolcanoGroupNameAnnotation, "volcano-pg")
	plain := label(musterv1alpha1.GroupLabel, "plain")
	tests := []struct {
		name string
		opts []podOpt
		want Ref
	}{
		{"native alone", []podOpt{native}, Ref{engine.Native, testNamespace, "native-pg"}},
		{"coscheduling alone", []podOpt{cosched}, Ref{engine.Coscheduling, testNamespace, "cosched-pg"}},
		{"volcano alone", []podOpt{volcano}, Ref{engine.Volcano, testNamespace, "volcano-pg"}},
		{"labels alone", []podOpt{plain}, Ref{engine.Labels, testNamespace, "plain"}},
		{"none is a single group named after the pod", nil, Ref{engine.Single, testNamespace, "p"}},
		{"native wins over all", []podOpt{plain, volcano, cosched, native}, Ref{engine.Native, testNamespace, "native-pg"}},
		{"coscheduling wins over volcano and labels", []podOpt{plain, volcano, cosched}, Ref{engine.Coscheduling, testNamespace, "cosched-pg"}},
		{"volcano wins over labels", []podOpt{plain, volcano}, Ref{engine.Volcano, testNamespace, "volcano-pg"}},
		{"empty native name falls through", []podOpt{schedulingGroup(""), cosched}, Ref{engine.Coscheduling, testNamespace, "cosched-pg"}},
		{"empty coscheduling label falls through", []podOpt{label(musterv1alpha1.CoschedulingPodGroupLabel, ""), plain}, Ref{engine.Labels, testNamespace, "plain"}},
		{"empty volcano annotation falls through", []podOpt{annotate(musterv1alpha1.VolcanoGroupNameAnnotation, "")}, Ref{engine.Single, testNamespace, "p"}},
		{"empty plain label is no group", []podOpt{label(musterv1alpha1.GroupLabel, "")}, Ref{engine.Single, testNamespace, "p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, GroupOf(pod("p", tt.opts...))); diff != "" {
				t.Errorf("GroupOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefKeyMatchesSpecKey(t *testing.T) {
	ref := Ref{engine.Labels, testNamespace, "plain"}
	if got, want := ref.Key(), "Labels/ml/plain"; got != want {
		t.Errorf("Key() = %q, want %q", got, want)
	}
	spec := FromLabels(ref, pods("w", 2, label(musterv1alpha1.GroupLabel, "plain"), annotate(musterv1alpha1.MinMemberAnnotation, "2")), nil)
	if spec.Key != ref.Key() {
		t.Errorf("FromLabels Key = %q, want Ref.Key() %q", spec.Key, ref.Key())
	}
}

func TestJoinedBy(t *testing.T) {
	tests := map[engine.Source]string{
		engine.Native:       "set spec.schedulingGroup.podGroupName",
		engine.Coscheduling: "carry the scheduling.x-k8s.io/pod-group label",
		engine.Volcano:      "carry the scheduling.k8s.io/group-name annotation",
		engine.Labels:       "carry the muster.dev/group label",
		engine.Single:       "name no group",
	}
	for source, want := range tests {
		if got := JoinedBy(source); got != want {
			t.Errorf("JoinedBy(%s) = %q, want %q", source, got, want)
		}
	}
}
