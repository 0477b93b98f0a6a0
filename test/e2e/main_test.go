// Package e2e runs muster as it is deployed — a `muster serve` process built from
// this tree, with deploy/'s Configuration, RBAC and ServiceAccount — against one
// sandbox (a real kube-apiserver with a simulated kubelet) per test package, and
// checks the guide's scenarios end to end. Faults between muster and the API server
// are injected by a proxy (sandboxtest.Proxy); crashes are SIGKILLs.
package e2e

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{}))
}
