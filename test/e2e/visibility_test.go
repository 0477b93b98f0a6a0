package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestTenantExplainsThroughTheVisibilityAPI: a tenant bound to the shipped muster-user
// role in their namespace (impersonated, so the API server authenticates them and
// forwards their identity) may not list the nodes, yet their explain of a waiting
// group shows the fit muster computes now, read through muster's visibility API
// (an APIService in front of `muster serve`, which authorizes each request with a
// SubjectAccessReview). The same tenant is refused another namespace's group.
func TestTenantExplainsThroughTheVisibilityAPI(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "vis", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	addr, err := sandbox.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	m := startMuster(t, env, musterOptions{configure: func(cfg *musterv1alpha1.Configuration) {
		cfg.Visibility.BindAddress, cfg.Visibility.CertDir = addr, certDir
	}})
	registerVisibility(t, env, m, addr, filepath.Join(certDir, "tls.crt"))

	holder := pytorchJob{ns: ns, name: "holder", workers: 1, plain: true}
	holder.create(t, env, c)
	waitCondition(t, env, c, ns, "holder", "PodsReady", metav1.ConditionTrue)
	waiter := pytorchJob{ns: ns, name: "waiter", workers: 1, plain: true}
	waiter.create(t, env, c)
	waitPhase(t, env, c, ns, "waiter", "Queued")

	// The shipped role, and the rules the built-in view role aggregates (pods, events).
	tenantRC := tenantConfig(t, env, ns, "muster-user")
	bindRole(t, env, ns, "system:aggregate-to-view", "tenant-"+ns)
	tenant, err := cliClients(tenantRC)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := tenant.Nodes(ctx); !apierrors.IsForbidden(err) {
		t.Fatalf("listing nodes as the tenant: expected Forbidden, found %v", err)
	}
	var e *explain.Explanation
	env.WaitFor(t, "the tenant's RoleBinding to reach muster's authorizer", func(ctx context.Context) (bool, error) {
		e, err = tenant.Explanation(ctx, ns, "waiter", engine.Coscheduling)
		return err == nil, nil
	})
	if e.Phase != "Queued" || e.Fit == nil || !strings.Contains(e.Fit.String(), "Insufficient nvidia.com/gpu") {
		t.Errorf("the visibility API's explanation of waiter: expected phase Queued and a fit short of GPUs, found phase %q, fit %v", e.Phase, e.Fit)
	}
	f, err := explain.Gather(ctx, tenant, "podgroup/waiter", ns, "muster", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := explain.Build(f).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("explain as the tenant:\n%s", out.String())
	for _, want := range []string{"now: ", "Insufficient nvidia.com/gpu", "fit computed by muster's visibility API"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain as the tenant: expected %q in it, found:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "recorded diagnosis, not a fit computed now") {
		t.Errorf("explain as the tenant: expected a fit computed now, found the recorded diagnosis only:\n%s", out.String())
	}
	if _, err := tenant.Explanation(ctx, other, "waiter", engine.Coscheduling); !apierrors.IsForbidden(err) {
		t.Errorf("the visibility API for another namespace as the tenant: expected Forbidden, found %v", err)
	}
	if _, err := tenant.Explanation(ctx, ns, "no-such-group", ""); !apierrors.IsNotFound(err) {
		t.Errorf("the visibility API for a group that does not exist: expected NotFound, found %v", err)
	}
}

// registerVisibility waits for m's serving certificate at certFile and routes the
// sandbox's visibility.muster.dev to m at addr until the test ends.
func registerVisibility(t *testing.T, env *sandboxtest.Env, m *muster, addr, certFile string) {
	t.Helper()
	var ca []byte
	env.WaitFor(t, "muster's visibility API certificate at "+certFile, func(context.Context) (bool, error) {
		select {
		case <-m.Done():
			t.Fatalf("muster exited: %v", m.Err())
		default:
		}
		var err error
		ca, err = os.ReadFile(certFile)
		return err == nil && len(ca) > 0, nil
	})
	ctx := context.Background()
	if err := sandbox.RegisterVisibility(ctx, env.Config, m.Configuration, addr, ca); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sandbox.UnregisterVisibility(ctx, env.Config, m.Configuration); err != nil {
			t.Error(err)
		}
	})
}

// waitPhase waits until muster's record on scheduler-plugins PodGroup ns/name is in
// phase.
func waitPhase(t *testing.T, env *sandboxtest.Env, c client.Client, ns, name, phase string) {
	t.Helper()
	env.WaitFor(t, "PodGroup "+ns+"/"+name+" in phase "+phase, func(ctx context.Context) (bool, error) {
		pg := &spv1alpha1.PodGroup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			return false, err
		}
		rec, ok, err := explain.RecordIn(pg.Annotations)
		if err != nil || !ok {
			return false, err
		}
		return rec.Phase == phase, nil
	})
}
