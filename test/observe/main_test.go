// Package observe checks what users see of muster on a real API server: the text of
// `muster explain` for each failure path of the guide (golden files in testdata/,
// regenerated with -rewrite), and the metrics muster serves.
package observe

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{}))
}

// startMuster runs `muster serve`, built from this tree, against the sandbox as
// deployed (deploy/'s Configuration, RBAC and ServiceAccount; see
// sandboxtest.Env.StartMuster), serving metrics on a free loopback port, and
// returns that address once muster is leading. It stops when the test ends.
func startMuster(t *testing.T, env *sandboxtest.Env) string {
	t.Helper()
	addr, _ := startMusterWith(t, env, sandboxtest.MusterOptions{})
	return addr
}

// startClockedMuster is startMuster with muster's timers on its test clock
// (sandboxtest.MusterOptions.Clock), which the test moves forward with the Muster it
// returns.
func startClockedMuster(t *testing.T, env *sandboxtest.Env) (string, *sandboxtest.Muster) {
	t.Helper()
	return startMusterWith(t, env, sandboxtest.MusterOptions{Clock: true})
}

// startMusterWith is startMuster with o (whose Configure it sets).
func startMusterWith(t *testing.T, env *sandboxtest.Env, o sandboxtest.MusterOptions) (string, *sandboxtest.Muster) {
	t.Helper()
	addr := sandboxtest.FreeAddr(t)
	o.Configure = func(c *musterv1alpha1.Configuration) { c.MetricsAddr = addr }
	m := env.StartMuster(t, o)
	waitLeading(t, m, addr)
	return addr, m
}

// waitLeading waits until the muster serving metrics on addr reports that it leads.
func waitLeading(t *testing.T, m *sandboxtest.Muster, addr string) {
	t.Helper()
	deadline := time.Now().Add(sandboxtest.WaitTimeout)
	for {
		if leading, _ := sandboxtest.Leading(addr); leading {
			return
		}
		select {
		case <-m.Done():
			t.Fatalf("muster exited before leading: %v", m.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("muster serving metrics on %s: expected it to lead within %s, found it not leading", addr, sandboxtest.WaitTimeout)
		}
	}
}
