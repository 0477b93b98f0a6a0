package engine

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	gt "github.com/muster-sched/muster/internal/gangtest"
)

func TestTerminationGrace(t *testing.T) {
	grace := func(s int64) *corev1.Pod {
		p := gt.Pod("p").Obj()
		p.Spec.TerminationGracePeriodSeconds = &s
		return p
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want time.Duration
	}{
		{"unset is the API's 30s", []*corev1.Pod{gt.Pod("p").Obj()}, 30 * time.Second},
		{"zero", []*corev1.Pod{grace(0)}, 0},
		{"the longest", []*corev1.Pod{grace(5), grace(600), gt.Pod("q").Obj()}, 10 * time.Minute},
	} {
		if got := terminationGrace(tc.pods); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
