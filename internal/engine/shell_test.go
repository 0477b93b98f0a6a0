package engine_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/lifecycle"
)

// TestReplacement: which failed members are replaced alone, and which are left to the
// group's lifecycle or their controller.
func TestReplacement(t *testing.T) {
	rejected := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w-1"},
		Spec:   corev1.PodSpec{NodeName: "n-1"},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfnvidia.com/gpu", Message: "node has 0 free"}}
	crashed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w-2"},
		Spec:   corev1.PodSpec{NodeName: "n-2"},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "NodeLost"}}
	owned := crashed.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u", Controller: ptrTrue()}}
	tests := []struct {
		name   string
		phase  lifecycle.Phase
		pod    *corev1.Pod
		reason string // "" = not replaced alone
	}{
		{"kubelet rejection while starting", lifecycle.Starting, rejected, engine.ReasonKubeletRejected},
		{"kubelet rejection while queued is not ours to fix", lifecycle.Queued, rejected, ""},
		{"plain member lost while running", lifecycle.Running, crashed, engine.ReasonMemberFailed},
		{"plain member failing while starting: the start-timeout decides", lifecycle.Starting, crashed, ""},
		{"member with a controller: the controller replaces it", lifecycle.Running, owned, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, ok := engine.Replacement(tc.phase, tc.pod, "Labels/ns/g")
			if got := map[bool]string{true: ev.Reason, false: ""}[ok]; got != tc.reason {
				t.Fatalf("replacement reason %q, want %q", got, tc.reason)
			}
			if ok && !strings.Contains(ev.Message, tc.pod.Name) {
				t.Errorf("message %q does not name the pod", ev.Message)
			}
		})
	}
}

func ptrTrue() *bool { b := true; return &b }

// TestResumeAt: a Job suspended for a group is resumed at the end of its backoff, never
// once the group has Failed, and at once otherwise.
func TestResumeAt(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		st   engine.Status
		want time.Time
	}{
		{"backoff", engine.Status{Phase: lifecycle.Backoff, WakeAt: now.Add(30 * time.Second)}, now.Add(30 * time.Second)},
		{"backoff already over", engine.Status{Phase: lifecycle.Backoff, WakeAt: now.Add(-time.Second)}, now},
		{"failed", engine.Status{Phase: lifecycle.Failed}, time.Time{}},
		{"queued", engine.Status{Phase: lifecycle.Queued}, now},
	}
	for _, tc := range tests {
		if got := tc.st.ResumeAt(now); !got.Equal(tc.want) {
			t.Errorf("%s: expected %v, found %v", tc.name, tc.want, got)
		}
	}
}
