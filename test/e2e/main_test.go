// Package e2e runs muster as it is deployed — a `muster serve` process built from
// this tree, with deploy/'s Configuration, RBAC and ServiceAccount — against one
// sandbox (a real kube-apiserver with a simulated kubelet) per test package, and
// checks the guide's scenarios end to end. Faults between muster and the API server
// are injected by a proxy (sandboxtest.Proxy); crashes are SIGKILLs.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{}))
}

// ensureNamespace creates a namespace unless it exists.
func ensureNamespace(kube kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// musterNamespace is where muster's Lease, records and signing key live.
const musterNamespace = "muster-system"
