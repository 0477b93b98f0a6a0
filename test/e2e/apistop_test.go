package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// apiStop is how long TestAPIServerStoppedDuringBinds keeps the API server stopped:
// longer than the lease, so muster loses it mid-bind.
const apiStop = 30 * time.Second

// TestAPIServerStoppedDuringBinds stops the API server (its whole process, with
// SIGSTOP) for 30 s in the middle of a gang's binds, as a frozen control-plane host
// would, then continues it. muster loses its lease and exits, as it must; restarted,
// as its Deployment would restart it, it finishes the plan in flight: the gang is
// whole, no pod was bound twice or moved, and no node is over-committed.
func TestAPIServerStoppedDuringBinds(t *testing.T) {
	const gang, stopAt = 8, 4
	env, api := sandboxtest.StartSandboxProcess(t, sandbox.Cluster{Pools: []sandbox.NodePool{
		{Name: "frozen", Count: gang, CPU: "16", Memory: "64Gi", GPUs: 1},
	}})
	c := newClient(t, env.Config)
	ns := env.Namespace(t)
	moves := watchNodeNames(t, env, ns)
	proxy := sandboxtest.StartProxyTo(t, env.Config)
	// The API server stops when bind stopAt arrives, once the binds before it are
	// answered: the gang is part bound.
	stopped := make(chan time.Time, 1)
	answered := make(chan struct{}, stopAt)
	var mu sync.Mutex
	binds := 0
	proxy.SetHook(func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if _, _, _, ok := sandboxtest.BindingOf(r); !ok {
			forward.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		binds++
		n := binds
		mu.Unlock()
		if n == stopAt {
			for range stopAt - 1 {
				select {
				case <-answered:
				case <-time.After(sandboxtest.WaitTimeout):
					t.Errorf("expected the %d binds before bind %d answered, found them pending", stopAt-1, stopAt)
				}
			}
			if err := api.Pause(); err != nil {
				t.Error(err)
			}
			stopped <- time.Now()
		}
		forward.ServeHTTP(w, r) // waits, while the API server is stopped, like muster's own request
		if n < stopAt {
			answered <- struct{}{}
		}
	})
	t.Cleanup(func() { _ = api.Resume() }) // if the test fails while it is stopped
	first := startMuster(t, env, musterOptions{proxy: proxy})
	job := pytorchJob{ns: ns, name: "frozen", workers: gang - 1, plain: true}
	job.create(t, env, c)

	var at time.Time
	select {
	case at = <-stopped:
		t.Logf("the API server stopped at bind %d of %d, the %d before it answered", stopAt, gang, stopAt-1)
	case <-time.After(sandboxtest.WaitTimeout):
		t.Fatalf("expected muster to bind %d pods, found bind %d never sent", gang, stopAt)
	}
	select {
	case <-first.Done():
		t.Logf("muster exited %s into the stop: %v", time.Since(at).Round(time.Millisecond), first.Err())
	case <-time.After(apiStop):
		t.Logf("muster still runs after %s of stop", apiStop)
	}
	if d := apiStop - time.Since(at); d > 0 {
		time.Sleep(d) // the fault's length, not a wait for muster
	}
	if err := api.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	half := stateOf(t, env, ns, job.name).holding
	t.Logf("API server continued after %s; the gang held %d of %d nodes", time.Since(at).Round(time.Millisecond), half, gang)

	// As its Deployment would, the exited muster is started again.
	var restarted *muster
	settled := waitUntil(t, "the gang whole after the API server continued", sandboxtest.WaitTimeout, func(context.Context) (bool, error) {
		select {
		case <-first.Done():
			if restarted == nil {
				t.Logf("restarting muster %s after the API server continued", time.Since(resumed).Round(time.Millisecond))
				restarted = startMuster(t, env, musterOptions{proxy: proxy})
			}
		default:
		}
		return stateOf(t, env, ns, job.name).holding == gang, nil
	})
	t.Logf("the gang was whole %s after the API server continued (muster restarted: %v)", settled.Round(time.Millisecond), restarted != nil)
	assertNoOvercommit(t, env, ns)
	for _, m := range moves() {
		t.Error(m)
	}
}
