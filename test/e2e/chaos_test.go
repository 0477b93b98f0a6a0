package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// Chaos runs are set by environment variables: MUSTER_CHAOS_TRIALS (default 16, every
// kill point once; a long run sets hundreds) and MUSTER_CHAOS_SEED (default: the time;
// printed, so that a failing run can be repeated).
const (
	chaosTrialsEnv = "MUSTER_CHAOS_TRIALS"
	chaosSeedEnv   = "MUSTER_CHAOS_SEED"
)

// chaosTrial is one kill: during the binds of a gang, or during the eviction of a
// preempted gang, at the request numbered at (1-based) of that kind; with forwarded,
// that request reaches the API server before muster dies, else it never does.
type chaosTrial struct {
	evict     bool
	at        int
	forwarded bool
}

func (c chaosTrial) String() string {
	kind, fate := "bind", "held"
	if c.evict {
		kind = "delete"
	}
	if c.forwarded {
		fate = "forwarded"
	}
	return fmt.Sprintf("kill at %s %d (%s)", kind, c.at, fate)
}

// chaosGang is the size of each trial's gangs.
const chaosGang = 4

// TestKillAtRandom SIGKILLs `muster serve` during the binds of a gang and during the
// eviction of a gang preempted by a higher-priority one, and restarts it. After each
// kill: no pod is bound twice, no node is over-committed, and within the recovery
// window every group is whole or cleanly requeued (no member bound). The trials take
// the kill points (chaosTrials) in a seeded random order, each once before any again:
// the default run tries each of the 16 once.
func TestKillAtRandom(t *testing.T) {
	trials := len(chaosTrials())
	if s := os.Getenv(chaosTrialsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: expected a positive number of trials", chaosTrialsEnv, s)
		}
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(chaosSeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: expected an unsigned integer", chaosSeedEnv, s)
		}
		seed = n
	}
	t.Logf("chaos: %d trials, seed %d (repeat with %s=%d)", trials, seed, chaosSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	env := sandboxtest.Shared(t)
	c := newClient(t, env.Config)
	urgent := "chaos-urgent"
	createPriorityClass(t, env, urgent, 1000, corev1.PreemptLowerPriority)
	var order []chaosTrial
	for i := range trials {
		if len(order) == 0 {
			order = chaosTrials()
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		tr := order[0]
		order = order[1:]
		t.Run(fmt.Sprintf("%d %s", i, tr), func(t *testing.T) {
			runChaosTrial(t, env, c, i, tr, urgent)
		})
	}
}

// chaosTrials returns every kill point: each bind of a gang and each pod delete of a
// preempted gang, the request held or forwarded.
func chaosTrials() []chaosTrial {
	var out []chaosTrial
	for _, evict := range []bool{false, true} {
		for at := 1; at <= chaosGang; at++ {
			for _, forwarded := range []bool{false, true} {
				out = append(out, chaosTrial{evict: evict, at: at, forwarded: forwarded})
			}
		}
	}
	return out
}

// runChaosTrial runs one trial on nodes and a namespace of its own.
func runChaosTrial(t *testing.T, env *sandboxtest.Env, c client.Client, i int, tr chaosTrial, urgent string) {
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: fmt.Sprintf("chaos-%d", i), Count: chaosGang, CPU: "16", Memory: "64Gi", GPUs: 1})
	moves := watchNodeNames(t, env, ns)
	proxy := env.StartProxy(t)
	lease := func(attempt string) func(*musterv1alpha1.Configuration) {
		// A Lease of its own per process: the restarted muster need not wait out the
		// killed one's lease (TestLeaderHandOver measures that wait).
		return func(cfg *musterv1alpha1.Configuration) {
			cfg.LeaderElection.LeaseName = fmt.Sprintf("chaos-%d-%s", i, attempt)
		}
	}
	first := startMuster(t, env, musterOptions{proxy: proxy, configure: lease("first")})
	low := pytorchJob{ns: ns, name: "low", workers: chaosGang - 1, plain: true}
	vip := pytorchJob{ns: ns, name: "vip", workers: chaosGang - 1, plain: true, priorityClass: urgent}
	if tr.evict {
		low.create(t, env, c)
		waitCondition(t, env, c, ns, "low", "PodsReady", metav1.ConditionTrue)
	}
	fired := killSwitch(proxy, tr, ns)
	began := time.Now()
	if tr.evict {
		vip.create(t, env, c)
	} else {
		low.create(t, env, c)
	}
	select {
	case <-fired:
	case <-time.After(sandboxtest.WaitTimeout):
		t.Fatalf("%s: the request was never sent", tr)
	}
	first.kill(t)
	killed := time.Since(began)
	proxy.SetHook(nil)
	startMuster(t, env, musterOptions{proxy: proxy, configure: lease("restarted")})
	settled := waitUntil(t, "every group whole or cleanly requeued", sandboxtest.WaitTimeout, func(context.Context) (bool, error) {
		l := stateOf(t, env, ns, "low").holding
		if !tr.evict {
			return l == chaosGang, nil
		}
		return l == 0 && stateOf(t, env, ns, "vip").holding == chaosGang, nil
	})
	t.Logf("%s: killed %s after the first create; settled %s after the restart", tr, killed.Round(time.Millisecond), settled.Round(time.Millisecond))
	assertNoOvercommit(t, env, ns)
	for _, m := range moves() {
		t.Error(m)
	}
}

// killSwitch makes proxy fire the returned channel at the trial's request (a bind,
// or a delete of a pod in ns) and hold every request of that kind after it, and the
// trial's request itself unless it is to be forwarded.
func killSwitch(proxy *sandboxtest.Proxy, tr chaosTrial, ns string) <-chan struct{} {
	fired := make(chan struct{})
	var mu sync.Mutex
	seen := 0
	proxy.SetHook(func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		var match bool
		if tr.evict {
			pns, _, ok := sandboxtest.PodDeleteOf(r)
			match = ok && pns == ns
		} else {
			_, _, _, match = sandboxtest.BindingOf(r)
		}
		if !match {
			forward.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		seen++
		n := seen
		mu.Unlock()
		switch {
		case n < tr.at:
			forward.ServeHTTP(w, r)
		case n == tr.at && tr.forwarded:
			forward.ServeHTTP(w, r)
			close(fired)
		case n == tr.at:
			close(fired)
			proxy.Hold(w, r)
		default:
			proxy.Hold(w, r)
		}
	})
	return fired
}

// assertNoOvercommit fails if a node holds more GPUs in pods that are bound and not
// finished than it has.
func assertNoOvercommit(t *testing.T, env *sandboxtest.Env, ns string) {
	t.Helper()
	used := map[string]int64{}
	for _, p := range listPods(t, env, ns) {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			q := ctr.Resources.Requests[sandbox.ResourceGPU]
			used[p.Spec.NodeName] += q.Value()
		}
	}
	for node, n := range used {
		got, err := env.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		capacity := got.Status.Allocatable[sandbox.ResourceGPU]
		if n > capacity.Value() {
			t.Errorf("node %s: expected at most %d GPUs in use, found %d", node, capacity.Value(), n)
		}
	}
}
