package e2e

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// muster is one running muster in the test process.
type muster struct {
	cancel context.CancelFunc
	done   chan error
}

// musterOptions adjust a muster started by startMuster.
type musterOptions struct {
	beforeBind func(pod, node string) bool
	// wrapTransport, if set, wraps every request muster sends.
	wrapTransport func(http.RoundTripper) http.RoundTripper
}

// startMuster runs muster against the sandbox, as the deploy/ ServiceAccount, with
// leader election on, and stops it when the test ends.
func startMuster(t *testing.T, env *sandboxtest.Env, o musterOptions) *muster {
	t.Helper()
	if err := ensureNamespace(env.Kube, musterNamespace); err != nil {
		t.Fatal(err)
	}
	cfg := musterv1alpha1.DefaultConfiguration()
	cfg.MetricsAddr, cfg.HealthAddr = musterv1alpha1.DisabledAddr, musterv1alpha1.DisabledAddr
	rc := serviceAccountConfig(t, env)
	rc.WrapTransport = o.wrapTransport
	ctx, cancel := context.WithCancel(context.Background())
	m := &muster{cancel: cancel, done: make(chan error, 1)}
	go func() {
		m.done <- controller.Run(ctx, controller.Options{
			Config: rc, Configuration: cfg, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
			BeforeBind:    o.beforeBind,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		})
	}()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// stop stops muster and waits until it has returned; it may be called twice.
func (m *muster) stop(t *testing.T) {
	t.Helper()
	m.cancel()
	select {
	case err, ok := <-m.done:
		if !ok {
			return // stopped before
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("muster stopped with an error: %v", err)
		}
		close(m.done)
	case <-time.After(sandboxtest.WaitTimeout):
		t.Errorf("muster did not stop within %s", sandboxtest.WaitTimeout)
	}
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
