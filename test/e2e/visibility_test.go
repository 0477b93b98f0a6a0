package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	spv1alpha1 "github.com/muster-sched/muster/api/schedulerplugins/v1alpha1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
	"github.com/muster-sched/muster/internal/visibility"
)

// TestTenantExplainsThroughTheVisibilityAPI: a tenant bound to the shipped muster-user
// role in their namespace (impersonated, so the API server authenticates them and
// forwards their identity) may not list the nodes, yet their explain of a waiting
// group shows the what-if fit muster computes now (labelled as such), read through muster's visibility API
// (an APIService in front of `muster serve`, which authorizes each request with a
// SubjectAccessReview). The same tenant is refused another namespace's group.
func TestTenantExplainsThroughTheVisibilityAPI(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	nodes := env.CreateNodes(t, sandbox.NodePool{Name: "vis", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	addr := sandboxtest.FreeAddr(t)
	certDir := t.TempDir()
	m := startMuster(t, env, musterOptions{configure: func(cfg *musterv1alpha1.Configuration) {
		cfg.Visibility.BindAddress, cfg.Visibility.CertDir = addr, certDir
		cfg.Visibility.Dashboard = true
	}})
	registerVisibility(t, env, m)

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
	f, err := explain.Gather(ctx, tenant, "podgroup/waiter", ns, []string{"muster"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := explain.Build(f).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("explain as the tenant:\n%s", out.String())
	for _, want := range []string{"what-if, placed now by explain (not muster's decision): ", "Insufficient nvidia.com/gpu",
		"what-if computed by muster's visibility API"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain as the tenant: expected %q in it, found:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "no what-if placement now") {
		t.Errorf("explain as the tenant: expected a what-if computed now, found the recorded diagnosis only:\n%s", out.String())
	}
	if _, err := tenant.Explanation(ctx, other, "waiter", engine.Coscheduling); !apierrors.IsForbidden(err) {
		t.Errorf("the visibility API for another namespace as the tenant: expected Forbidden, found %v", err)
	}
	if _, err := tenant.Explanation(ctx, ns, "no-such-group", ""); !apierrors.IsNotFound(err) {
		t.Errorf("the visibility API for a group that does not exist: expected NotFound, found %v", err)
	}

	// The dashboard behind the API server: the platform team's muster-admin may open it,
	// the tenant may not (it shows every namespace).
	page := visibility.DashboardPath + "/"
	if _, err := tenant.Kube.Discovery().RESTClient().Get().AbsPath(page).DoRaw(ctx); !apierrors.IsForbidden(err) {
		t.Errorf("the dashboard as the tenant: expected Forbidden, found %v", err)
	}
	admin := platformConfig(t, env, "platform-"+ns, "muster-admin")
	var dcode int
	dres := admin.Discovery().RESTClient().Get().AbsPath(page).Do(ctx).StatusCode(&dcode)
	html, err := dres.Raw()
	if err != nil {
		t.Fatalf("the dashboard as muster-admin: HTTP %d %v: %.500s", dcode, err, html)
	}
	for _, want := range []string{`href="style.css"`, nodes[0], "holder"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the dashboard as muster-admin: expected %q in the page, found:\n%s", want, html)
		}
	}
	var code int
	res := admin.Discovery().RESTClient().Get().AbsPath(visibility.DashboardPath + "/live.js").Do(ctx).StatusCode(&code)
	if raw, err := res.Raw(); err != nil || code != 200 {
		t.Errorf("the dashboard's script as muster-admin: HTTP %d %v: %.300s", code, err, raw)
	}
}

// platformConfig binds ClusterRole role to user cluster-wide until the test ends and
// returns a clientset that impersonates the user, once the binding is in effect (RBAC's
// authorizer learns of a binding from its informer, a moment after it is created).
func platformConfig(t *testing.T, env *sandboxtest.Env, user, role string) kubernetes.Interface {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	ctx := context.Background()
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding %s to %s: %v", role, user, err)
	}
	t.Cleanup(func() {
		if err := env.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ClusterRoleBinding %s: %v", user, err)
		}
	})
	waitBound(t, env, "", role, user)
	rc := rest.CopyConfig(env.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

// registerVisibility routes the sandbox's visibility.muster.dev to m until the test
// ends.
func registerVisibility(t *testing.T, env *sandboxtest.Env, m *muster) {
	t.Helper()
	ctx := context.Background()
	if err := sandbox.RegisterVisibility(ctx, env.Config, m.Configuration, m.Muster.Muster); err != nil {
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
		rec, ok, err := musterv1alpha1.RecordIn(pg.Annotations)
		if err != nil || !ok {
			return false, err
		}
		return rec.Phase == phase, nil
	})
}
