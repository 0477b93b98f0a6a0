package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestBindsInFlightBounded binds a gang of 150 and counts the Binding requests muster
// has in flight at once: at most 64, so that a big gang's binds share one HTTP/2
// connection (the API server allows 100 streams on one) instead of opening a
// connection, and a TLS handshake, per bind.
func TestBindsInFlightBounded(t *testing.T) {
	const members, bound = 150, 64
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "wide", Count: members, CPU: "16", Memory: "64Gi", GPUs: 1})
	ns := env.Namespace(t)
	binds := &inFlight{}
	proxy := env.StartProxy(t)
	proxy.SetHook(binds.hook)
	startMuster(t, env, musterOptions{proxy: proxy})
	job := pytorchJob{ns: ns, name: "wide", workers: members - 1, plain: true}
	job.create(t, env, newClient(t, env.Config))
	env.WaitFor(t, "every member bound", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "wide").holding == members, nil
	})
	if most, total := binds.stats(); most > bound || total < members {
		t.Fatalf("expected %d binds, at most %d in flight at once; found %d binds, %d at once", members, bound, total, most)
	}
}

// inFlight counts the Binding requests that pass through it.
type inFlight struct {
	mu                 sync.Mutex
	now, most, started int
}

// hook counts the Binding requests through a proxy.
func (f *inFlight) hook(w http.ResponseWriter, r *http.Request, forward http.Handler) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/binding") {
		forward.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	f.now++
	f.started++
	f.most = max(f.most, f.now)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.now--
		f.mu.Unlock()
	}()
	forward.ServeHTTP(w, r)
}

// stats returns the most binds in flight at once, and how many were sent.
func (f *inFlight) stats() (most, total int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most, f.started
}
