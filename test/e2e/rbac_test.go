package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// serviceAccount is the user muster runs as in deploy/.
const serviceAccount = "system:serviceaccount:muster-system:muster"

var applyRBAC sync.Once

// serviceAccountConfig applies deploy/rbac to the sandbox (once) and returns a config
// that impersonates muster's ServiceAccount, so that a verb missing from the
// ClusterRole fails the tests.
func serviceAccountConfig(t *testing.T, env *sandboxtest.Env) *rest.Config {
	t.Helper()
	var err error
	applyRBAC.Do(func() { err = applyDir(env.Client, filepath.Join("..", "..", "deploy", "rbac")) })
	if err != nil {
		t.Fatal(err)
	}
	rc := rest.CopyConfig(env.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:muster-system", "system:authenticated"}}
	return rc
}

// applyDir creates every object of the YAML files in dir, leaving those that exist.
func applyDir(c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
			if err != nil {
				return err
			}
			if err := c.Create(context.Background(), obj.(client.Object)); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
	}
	return nil
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
