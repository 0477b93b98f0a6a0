package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// handOverLease are the lease timings of TestLeaderHandOver.
var handOverLease = struct{ duration, renew, retry time.Duration }{4 * time.Second, 3 * time.Second, 500 * time.Millisecond}

// bindRound bounds one scheduling pass and the binds of a small gang: the
// Configuration's reconcilePeriod (1s) and the binds, with room for a loaded machine.
const bindRound = 3 * time.Second

// TestLeaderHandOver runs `muster serve` replicas with leader election, as deploy/
// does. SIGKILL of the leader after 3 of a gang's 8 binds: a standby leads once the
// lease runs out, and the gang is whole within the lease duration and one bind round
// of the kill, no pod bound twice. SIGTERM of the leader: it gives the Lease up on the
// way out (ReleaseOnCancel), so the next replica leads within a retry period or two
// instead of waiting out the lease.
func TestLeaderHandOver(t *testing.T) {
	env := sandboxtest.Shared(t)
	ns := env.Namespace(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "handover", Count: 8, CPU: "16", Memory: "64Gi", GPUs: 1})
	c := newClient(t, env.Config)
	moves := watchNodeNames(t, env, ns)
	proxy := env.StartProxy(t)
	var binds atomic.Int32
	proxy.SetHook(func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if _, _, _, ok := sandboxtest.BindingOf(r); ok && binds.Add(1) > 3 {
			proxy.Hold(w, r)
			return
		}
		forward.ServeHTTP(w, r)
	})
	a, b := startReplica(t, env, proxy), startReplica(t, env, proxy)
	leader, standby := waitOneLeads(t, a, b)

	job := pytorchJob{ns: ns, name: "gang", workers: 7, plain: true}
	job.create(t, env, c)
	env.WaitFor(t, "3 members bound", func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "gang").holding == 3, nil
	})
	proxy.SetHook(nil) // the next leader's binds go through
	killedAt := time.Now()
	leader.kill(t)
	led := waitLeads(t, standby, handOverLease.duration+bindRound)
	whole := waitUntil(t, "the gang whole", handOverLease.duration+bindRound, func(context.Context) (bool, error) {
		return stateOf(t, env, ns, "gang").holding == 8, nil
	})
	t.Logf("SIGKILL: the standby led %s after the kill, the gang was whole %s after it (lease %s)",
		led.Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond), handOverLease.duration)
	_ = whole
	waitCondition(t, env, c, ns, "gang", "PodsReady", metav1.ConditionTrue)
	for _, m := range moves() {
		t.Error(m)
	}
	assertNoFailedBinding(t, env, ns)

	next := startReplica(t, env, proxy)
	if leads, _ := sandboxtest.Leading(next.metrics); leads {
		t.Fatal("expected the new replica to stand by while another leads, found it leading")
	}
	termAt := time.Now()
	if err := standby.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Without ReleaseOnCancel the next replica waits out the lease (4s).
	handedOver := waitLeads(t, next, handOverLease.duration-time.Second)
	<-standby.Done()
	t.Logf("SIGTERM: the leader exited %s after the signal (%v), the next replica led %s after it",
		time.Since(termAt).Round(time.Millisecond), standby.Err(), handedOver.Round(time.Millisecond))
	if standby.Err() != nil {
		t.Errorf("expected the leader to exit 0 after SIGTERM, found %v", standby.Err())
	}
}

// replica is one of several musters sharing a Lease.
type replica struct {
	*muster
	metrics string
}

// startReplica starts a muster with the hand-over lease timings, serving metrics on a
// free port (where leader_election_master_status says whether it leads).
func startReplica(t *testing.T, env *sandboxtest.Env, proxy *sandboxtest.Proxy) *replica {
	t.Helper()
	addr := sandboxtest.FreeAddr(t)
	m := startMuster(t, env, musterOptions{proxy: proxy, configure: func(cfg *musterv1alpha1.Configuration) {
		cfg.MetricsAddr = addr
		cfg.LeaderElection.LeaseName = "handover"
		le := &cfg.LeaderElection
		le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration = handOverLease.duration, handOverLease.renew, handOverLease.retry
	}})
	return &replica{muster: m, metrics: addr}
}

// waitOneLeads waits until one of a and b leads and returns it first.
func waitOneLeads(t *testing.T, a, b *replica) (leader, standby *replica) {
	t.Helper()
	waitUntil(t, "a leader", sandboxtest.WaitTimeout, func(context.Context) (bool, error) {
		for _, r := range []*replica{a, b} {
			if leads, _ := sandboxtest.Leading(r.metrics); leads {
				leader = r
			}
		}
		return leader != nil, nil
	})
	if leader == a {
		return a, b
	}
	return b, a
}

// waitLeads waits up to within for r to lead and returns how long it took.
func waitLeads(t *testing.T, r *replica, within time.Duration) time.Duration {
	t.Helper()
	return waitUntil(t, fmt.Sprintf("replica %d leading", r.PID()), within, func(context.Context) (bool, error) {
		leads, _ := sandboxtest.Leading(r.metrics)
		return leads, nil
	})
}
