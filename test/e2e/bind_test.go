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
	startMuster(t, env, musterOptions{wrapTransport: binds.wrap})
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

func (f *inFlight) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/binding") {
			return next.RoundTrip(r)
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
		return next.RoundTrip(r)
	})
}

// stats returns the most binds in flight at once, and how many were sent.
func (f *inFlight) stats() (most, total int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most, f.started
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (fn roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return fn(r) }
