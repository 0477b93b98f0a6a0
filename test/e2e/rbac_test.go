package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/muster-sched/muster/internal/controller"
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
// under RBAC, and that deploy/rbac grants muster no write it does not need: its
// ServiceAccount may bind pods, but may not read Secrets or write ConfigMaps in a
// user's namespace; in its own namespace it may write ConfigMaps (its records) and
// read only its signing key among the Secrets.
func TestRBACDeniesWhatTheRoleDoesNotGrant(t *testing.T) {
	env := sandboxtest.Shared(t)
	if err := ensureNamespace(env.Kube, musterNamespace); err != nil {
		t.Fatal(err)
	}
	sa := serviceAccountConfig(t, env)
	kube, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	ctx := context.Background()
	cm := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe-" + rand.String(5), Namespace: ns}}
	}
	denied := []struct {
		what string
		do   func() error
	}{
		{"listing Secrets of " + ns, func() error { _, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); return err }},
		{"creating a ConfigMap in " + ns, func() error {
			_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm(ns), metav1.CreateOptions{})
			return err
		}},
		{"listing ConfigMaps of every namespace", func() error { _, err := kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); return err }},
		{"reading another Secret of " + musterNamespace, func() error {
			_, err := kube.CoreV1().Secrets(musterNamespace).Get(ctx, "other", metav1.GetOptions{})
			return err
		}},
		{"listing Secrets of " + musterNamespace, func() error {
			_, err := kube.CoreV1().Secrets(musterNamespace).List(ctx, metav1.ListOptions{})
			return err
		}},
	}
	for _, d := range denied {
		if err := d.do(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as %s: expected Forbidden, found %v", d.what, serviceAccount, err)
		}
	}
	probe, err := kube.CoreV1().ConfigMaps(musterNamespace).Create(ctx, cm(musterNamespace), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a ConfigMap in %s as %s: expected it allowed, found %v", musterNamespace, serviceAccount, err)
	}
	if err := kube.CoreV1().ConfigMaps(musterNamespace).Delete(ctx, probe.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting a ConfigMap of %s as %s: expected it allowed, found %v", musterNamespace, serviceAccount, err)
	}
	_, err = kube.CoreV1().Secrets(musterNamespace).Get(ctx, controller.SigningKeySecret, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("reading Secret %s/%s as %s: expected it allowed, found %v", musterNamespace, controller.SigningKeySecret, serviceAccount, err)
	}
}
