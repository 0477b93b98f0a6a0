package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
)

func TestCheckMembers(t *testing.T) {
	member := label(musterv1alpha1.CoschedulingPodGroupLabel, "train")
	joined := func(ps ...[]*corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for _, p := range ps {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name      string
		minMember int
		pods      []*corev1.Pod
		owner     string   // fixture in testdata/owners, "" for none
		served    []string // the schedulerNames muster serves; nil for "muster" alone
		want      func(*engine.GroupSpec)
	}{{
		name:      "all muster's, no owner",
		minMember: 2,
		pods:      pods("w", 2, member),
	}, {
		name:      "no members yet",
		minMember: 2,
	}, {
		name:      "one member is another scheduler's",
		minMember: 3,
		pods:      joined(pods("w", 2, member), []*corev1.Pod{pod("launcher", member, scheduler("default-scheduler"))}),
		want: invalid(`spec.schedulerName: members disagree: "default-scheduler" on launcher; ` +
			`"muster" on w-0, w-1: expected "muster" on every member`),
	}, {
		name:      "members split over two other schedulers",
		minMember: 2,
		pods:      []*corev1.Pod{pod("a", member, scheduler("volcano")), pod("b", member, scheduler("default-scheduler"))},
		want: invalid(`spec.schedulerName: members disagree: "default-scheduler" on b; ` +
			`"volcano" on a: expected "muster" on every member`),
	}, {
		name:      "every member is another scheduler's",
		minMember: 2,
		pods:      pods("w", 2, member, scheduler("default-scheduler")),
		want:      invalid(`spec.schedulerName: "default-scheduler" on every member (w-0, w-1): expected "muster"`),
	}, {
		name:      "members under two names muster serves",
		minMember: 3,
		pods:      joined(pods("w", 2, member, scheduler("scheduler-plugins-scheduler")), []*corev1.Pod{pod("head", member)}),
		served:    []string{"muster", "scheduler-plugins-scheduler"},
	}, {
		name:      "every member is another scheduler's, two names served",
		minMember: 2,
		pods:      pods("w", 2, member, scheduler("default-scheduler")),
		served:    []string{"muster", "volcano"},
		want:      invalid(`spec.schedulerName: "default-scheduler" on every member (w-0, w-1): expected one of "muster", "volcano"`),
	}, {
		name:      "one member is another scheduler's, two names served",
		minMember: 3,
		pods:      joined(pods("w", 2, member, scheduler("volcano")), []*corev1.Pod{pod("launcher", member, scheduler("default-scheduler"))}),
		served:    []string{"muster", "volcano"},
		want: invalid(`spec.schedulerName: members disagree: "default-scheduler" on launcher; ` +
			`"volcano" on w-0, w-1: expected one of "muster", "volcano" on every member`),
	}, {
		name:      "launcher outside the group: 8 workers joined, owner declares 9",
		minMember: 9,
		pods:      pods("pi-worker", 8, member),
		owner:     "mpijob-v1",
		want: func(s *engine.GroupSpec) {
			s.Owner = &engine.Owner{APIVersion: "kubeflow.org/v1", Kind: "MPIJob", Name: "pi", Replicas: 9}
		},
	}, {
		name:      "minMember larger than the owner's replicas",
		minMember: 10,
		pods:      pods("w", 9, member),
		owner:     "pytorchjob",
		want: func(s *engine.GroupSpec) {
			s.Owner = &engine.Owner{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "train", Replicas: 9}
			s.Invalid = []string{"spec.minMember: 10: larger than the 9 replicas PyTorchJob train declares"}
		},
	}, {
		name:      "owner of an unknown kind: replicas unknown",
		minMember: 4,
		pods:      pods("w", 3, member),
		owner:     "deployment",
		want: func(s *engine.GroupSpec) {
			s.Owner = &engine.Owner{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		},
	}, {
		name:      "owner with malformed replicas",
		minMember: 2,
		pods:      pods("w", 2, member),
		owner:     "pytorchjob-malformed",
		want: func(s *engine.GroupSpec) {
			s.Owner = &engine.Owner{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "broken"}
			s.Invalid = []string{`owner PyTorchJob broken: spec.pytorchReplicaSpecs.Worker.replicas: "eight": expected a whole number, found string`}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *unstructured.Unstructured
			if tt.owner != "" {
				o = owner(t, tt.owner)
			}
			got := want(engine.Coscheduling, "train", tt.minMember, nil)
			served := tt.served
			if served == nil {
				served = []string{"muster"}
			}
			CheckMembers(&got, tt.pods, o, served)
			if diff := cmp.Diff(want(engine.Coscheduling, "train", tt.minMember, tt.want), got); diff != "" {
				t.Errorf("CheckMembers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckMembersNamesTheSourcesMinimum(t *testing.T) {
	tests := []struct {
		source engine.Source
		want   string
	}{
		{engine.Native, "spec.schedulingPolicy.gang.minCount: 12: larger than the 9 replicas PyTorchJob train declares"},
		{engine.Labels, "metadata.annotations[muster.dev/min-member]: 12: larger than the 9 replicas PyTorchJob train declares"},
		{engine.Volcano, "spec.minMember: 12: larger than the 9 replicas PyTorchJob train declares"},
	}
	for _, tt := range tests {
		spec := want(tt.source, "train", 12, nil)
		CheckMembers(&spec, nil, owner(t, "pytorchjob"), []string{"muster"})
		if diff := cmp.Diff([]string{tt.want}, spec.Invalid); diff != "" {
			t.Errorf("%s: Invalid (-want +got):\n%s", tt.source, diff)
		}
	}
}

func TestGathering(t *testing.T) {
	spec := want(engine.Coscheduling, "pi", 9, nil)
	tests := []struct {
		name    string
		members int
		owner   *unstructured.Unstructured
		want    string
	}{{
		name:    "launcher outside the group",
		members: 8,
		owner:   owner(t, "mpijob-v1"),
		want: "members joined: 8 of the 9 spec.minMember requires (pods that carry the scheduling.x-k8s.io/pod-group label); " +
			"MPIJob pi declares 9 replicas (Launcher 1, Worker 8)",
	}, {
		name:    "no owner",
		members: 1,
		want:    "members joined: 1 of the 9 spec.minMember requires (pods that carry the scheduling.x-k8s.io/pod-group label)",
	}, {
		name:    "owner of an unknown kind",
		members: 0,
		owner:   owner(t, "deployment"),
		want: "members joined: 0 of the 9 spec.minMember requires (pods that carry the scheduling.x-k8s.io/pod-group label); owner Deployment web: " +
			"unknown owner kind Deployment of apps/v1: expected a batch/v1 Job, a kubeflow.org training job, a " +
			"jobset.x-k8s.io/v1alpha2 JobSet or a ray.io/v1 RayCluster",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Gathering(spec, tt.members, tt.owner); got != tt.want {
				t.Errorf("Gathering:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
