package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestRestartWhilePlainPodsAreRecreated: muster stops after it evicted a plain group's
// pods, which no controller owns, and before it created them again (a finalizer holds
// the old pods until muster is stopped; then they go). The muster started after it creates them again from its records, and
// they carry the group's state after the eviction, so the group resumes: its second
// attempt is its last (max-retries 1), with the first in its history. Before, the pods
// created again carried the record as it was before the eviction, and the group started
// over.
func TestRestartWhilePlainPodsAreRecreated(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "recreate", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	first := startMuster(t, env, musterOptions{clock: true})
	const hold = "e2e.muster.dev/hold"
	names := []string{"held-0", "held-1"}
	for i := range names {
		p := plainMember(ns, "held", i, map[string]string{
			musterv1alpha1.StartTimeoutAnnotation: flakyStartTimeout,
			musterv1alpha1.MaxRetriesAnnotation:   "1",
			musterv1alpha1.BackoffBaseAnnotation:  flakyBackoff,
		})
		p.Finalizers = []string{hold}
		env.CreatePod(t, p)
	}
	release := func() {
		for _, name := range names {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			_, _ = env.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	}
	t.Cleanup(release)
	// The timers fire only when the test moves muster's clock: the group stays in
	// Backoff until then, however slow the machine.
	first.advancePast(t, env, "Starting", podRecord(env, ns, "held-0"))
	env.WaitFor(t, "both pods evicted at the start timeout", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.DeletionTimestamp == nil {
				return false, err
			}
		}
		return true, nil
	})
	before := waitPodRecord(t, env, ns, "held-0", "Backoff")
	first.stop(t)
	release()
	env.WaitFor(t, "the old pods gone", func(ctx context.Context) (bool, error) {
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
	second := startMuster(t, env, musterOptions{clock: true})
	second.advancePast(t, env, "Backoff", podRecord(env, ns, "held-0"))
	second.advancePast(t, env, "Starting", podRecord(env, ns, "held-0"))

	rec := waitPodRecord(t, env, ns, "held-0", "Failed")
	if rec.Failures != 2 || len(rec.Attempts) != 2 {
		t.Fatalf("expected 2 failed attempts in all, found %d failures, attempts %+v", rec.Failures, rec.Attempts)
	}
	if got, want := rec.Attempts[0].AdmittedAt, before.Attempts[0].AdmittedAt; !got.Equal(&want) {
		t.Errorf("expected the attempt from before the restart (admitted %s) first, found one admitted %s", want, got)
	}
}

// waitPodRecord waits until pod name carries its plain group's lifecycle record in
// phase, and returns it.
func waitPodRecord(t *testing.T, env *sandboxtest.Env, ns, name, phase string) musterv1alpha1.GroupLifecycle {
	t.Helper()
	var rec musterv1alpha1.GroupLifecycle
	env.WaitFor(t, fmt.Sprintf("the group %s, recorded on %s", phase, name), func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // between an eviction and the pod's creation
		}
		rec, err = recordOn(p.Annotations, "pod "+name)
		return rec.Phase == phase, err
	})
	return rec
}

// recordOn decodes the lifecycle record in annotations (of what, for errors); none
// decodes as an empty record.
func recordOn(annotations map[string]string, what string) (musterv1alpha1.GroupLifecycle, error) {
	rec, _, err := musterv1alpha1.RecordIn(annotations)
	if err != nil {
		return rec, fmt.Errorf("%s: %w", what, err)
	}
	return rec, nil
}

// TestFailedRecreationIsSentAgain: muster evicts a plain group's pods, which no
// controller owns, at its start timeout, and the API server answers its first
// re-creation of one of them with 500: muster creates that pod again, and both pods
// come back. (A failed re-creation dropped the pod's record: the pod was lost.)
func TestFailedRecreationIsSentAgain(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "failrecreate", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	proxy := env.StartProxy(t)
	hook, creates := refuseFirst(http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "")
	proxy.SetHook(hook)
	m := startMuster(t, env, musterOptions{clock: true, proxy: proxy})
	first := map[string]types.UID{}
	for i := range 2 {
		p := env.CreatePod(t, plainMember(ns, "lost", i, map[string]string{
			musterv1alpha1.StartTimeoutAnnotation: flakyStartTimeout,
			musterv1alpha1.MaxRetriesAnnotation:   "1",
			musterv1alpha1.BackoffBaseAnnotation:  flakyBackoff,
		}))
		first[p.Name] = p.UID
	}
	m.advancePast(t, env, "Starting", podRecord(env, ns, "lost-0"))
	env.WaitFor(t, "both pods evicted and created again", func(ctx context.Context) (bool, error) {
		for name, uid := range first {
			p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.UID == uid || p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if n := creates.Load(); n < 3 {
		t.Errorf("the pods created again with %d creations, want the refused one and two more", n)
	}
	t.Logf("both pods created again with %d creations, the first answered 500", creates.Load())
}
