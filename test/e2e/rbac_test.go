package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// serviceAccount is the user muster runs as in deploy/.
const serviceAccount = "system:serviceaccount:muster-system:muster"

// serviceAccountConfig applies deploy/rbac to the sandbox and returns a config that
// impersonates muster's ServiceAccount, so that what the ClusterRole does not grant
// fails.
func serviceAccountConfig(t *testing.T, env *sandboxtest.Env) *rest.Config {
	t.Helper()
	if err := sandbox.ApplyRBAC(context.Background(), env.Config); err != nil {
		t.Fatal(err)
	}
	rc := rest.CopyConfig(env.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:muster-system", "system:authenticated"}}
	return rc
}

// TestRBACDeniesWhatTheRoleDoesNotGrant checks that the tests' muster really runs
// under RBAC: its ServiceAccount may bind pods but may not read Secrets.
func TestRBACDeniesWhatTheRoleDoesNotGrant(t *testing.T) {
	env := sandboxtest.Shared(t)
	c := newClient(t, serviceAccountConfig(t, env))
	ns := env.Namespace(t)
	err := c.List(context.Background(), &corev1.SecretList{}, client.InNamespace(ns))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing Secrets as %s: expected Forbidden, found %v", serviceAccount, err)
	}
}
