package e2e

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// serviceAccountConfig returns the config muster runs with in the tests.
func serviceAccountConfig(t *testing.T, env *sandboxtest.Env) *rest.Config {
	t.Helper()
	return rest.CopyConfig(env.Config)
}
