package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// muster is one `muster serve` process started by a test.
type muster struct {
	*sandboxtest.Muster
	t testing.TB
}

// musterOptions adjust a muster started by startMuster.
type musterOptions struct {
	// proxy, if set, is where muster connects instead of the API server: faults are
	// injected there (sandboxtest.Proxy).
	proxy *sandboxtest.Proxy
	// configure, if set, edits the Configuration muster is given (deploy/'s, with
	// the test lease timings and no metrics or health servers).
	configure func(*musterv1alpha1.Configuration)
	// clock runs muster's timers on its test clock, which m.advancePast and
	// m.AdvanceClock move forward (sandboxtest.MusterOptions.Clock).
	clock bool
}

// startMuster runs `muster serve` from the freshly built binary against the
// sandbox, as deployed: deploy/'s Configuration, RBAC and ServiceAccount, with
// leader election on. It is stopped with SIGTERM when the test ends; its log is named
// in the test log if the test fails.
func startMuster(t *testing.T, env *sandboxtest.Env, o musterOptions) *muster {
	t.Helper()
	m := env.StartMuster(t, sandboxtest.MusterOptions{Proxy: o.proxy, Configure: o.configure, Clock: o.clock})
	return &muster{Muster: m, t: t}
}

// stop stops muster with SIGTERM and waits until it has exited cleanly; it may be
// called twice.
func (m *muster) stop(t *testing.T) {
	t.Helper()
	select {
	case <-m.Done():
		return
	default:
	}
	if err := m.Stop(sandboxtest.WaitTimeout); err != nil {
		t.Error(err)
	}
}

// kill kills muster with SIGKILL and waits until it is gone.
func (m *muster) kill(t *testing.T) {
	t.Helper()
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
}

// advancePast waits until the group's lifecycle record (read by record; false while
// there is none to read) is in phase with a timer set, and moves muster's clock past
// that timer, which fires at once; it returns the record it waited for, once muster's
// loop has passed at the new time.
func (m *muster) advancePast(t *testing.T, env *sandboxtest.Env, phase string, record func(context.Context) (musterv1alpha1.GroupLifecycle, bool)) musterv1alpha1.GroupLifecycle {
	t.Helper()
	var rec musterv1alpha1.GroupLifecycle
	env.WaitFor(t, "the group "+phase+", with a timer", func(ctx context.Context) (bool, error) {
		r, ok := record(ctx)
		rec = r
		return ok && r.Phase == phase && r.WakeAt != nil, nil
	})
	// The record's times are to the second.
	m.AdvanceClock(t, max(rec.WakeAt.Sub(m.Now(t))+time.Second, time.Second))
	return rec
}

// pastEveryTimer is how far the clock must move for every timer of a group with
// muster's default settings to have fired: its start- and recovery-timeout and its
// longest backoff, one after the other.
func (m *muster) pastEveryTimer() time.Duration {
	d := m.Configuration.GroupDefaults
	return d.StartTimeout.Duration + d.RecoveryTimeout.Duration + d.BackoffMax.Duration + time.Minute
}

// newClient returns a controller-runtime client that knows muster's types.
func newClient(t *testing.T, rc *rest.Config) client.Client {
	t.Helper()
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	rc = rest.CopyConfig(rc)
	rc.ContentType = "application/json"
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("creating a client: %v", err)
	}
	return c
}

// waitUntil polls cond every 20ms until it holds or timeout passes, and returns how
// long it took; it fails the test at the timeout.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func(context.Context) (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return time.Since(start)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: not within %s", what, timeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// logOnFailure logs, when the test fails, the lifecycle record of each named
// scheduler-plugins PodGroup of ns and every pod of ns (its node, phase, deletion and
// PodScheduled condition). Registered after startMuster, it runs while muster still
// does: what a failure that does not repeat needs to be understood afterwards.
func logOnFailure(t *testing.T, env *sandboxtest.Env, c client.Client, ns string, groups ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		for _, name := range groups {
			rec, ok := groupRecord(c, ns, name)(ctx)
			if !ok {
				t.Logf("PodGroup %s/%s: no record (gone, or not written)", ns, name)
				continue
			}
			b, _ := json.Marshal(rec)
			t.Logf("PodGroup %s/%s: record %s", ns, name, b)
		}
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("listing the pods of %s: %v", ns, err)
			return
		}
		for _, p := range pods.Items {
			ps := podScheduled(&p)
			t.Logf("pod %s: node %q, phase %s, deleting since %v, PodScheduled %q %s %q", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp, ps.Status, ps.Reason, ps.Message)
		}
	})
}
