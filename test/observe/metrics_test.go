package observe

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

const (
	heldGPU      = `muster_group_held_resource_seconds_total{resource="nvidia.com/gpu"}`
	cleanupCount = "muster_group_cleanup_seconds_count"
)

// advancePast waits until explain shows the group in phase with a timer set, and
// moves muster's clock past that timer, which fires at once; it returns once muster's
// loop has passed at the new time.
func advancePast(t *testing.T, env *sandboxtest.Env, m *sandboxtest.Muster, target, ns, phase string) {
	t.Helper()
	var wake time.Time
	env.WaitFor(t, target+" "+phase+", with a timer", func(context.Context) (bool, error) {
		lc := gather(t, env, target, ns).Lifecycle
		if lc == nil || lc.Phase != phase || lc.WakeAt == nil {
			return false, nil
		}
		wake = lc.WakeAt.Time
		return true, nil
	})
	// The record's times are to the second.
	m.AdvanceClock(t, max(wake.Sub(m.Now(t))+time.Second, time.Second))
}

// scrape reads one sample from muster's metrics endpoint; a series not yet exported is 0.
func scrape(t *testing.T, env *sandboxtest.Env, addr, series string) float64 {
	t.Helper()
	var value float64
	env.WaitFor(t, "the metrics endpoint", func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil // not listening yet
		}
		defer resp.Body.Close()
		value = 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
				if value, err = strconv.ParseFloat(rest, 64); err != nil {
					return false, fmt.Errorf("sample %q: %w", sc.Text(), err)
				}
			}
		}
		return true, sc.Err()
	})
	return value
}

// TestHeldResourceSecondsOfAnEvictedGroup: a group whose worker never becomes Ready holds
// its GPUs from admission until its eviction at the start-timeout; the counter grows by
// the bound GPUs times those seconds, within one reconcile period. The start-timeout,
// 10 minutes, comes by an advance of muster's clock.
func TestHeldResourceSecondsOfAnEvictedGroup(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "held", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	addr, m := startClockedMuster(t, env)
	ns := namespace(t, env, "metrics-never-ready")
	before := scrape(t, env, addr, heldGPU)
	cleanups := scrape(t, env, addr, cleanupCount)
	podGroup(t, env, ns, "probe", 2, map[string]string{
		musterv1alpha1.StartTimeoutAnnotation: "10m",
		musterv1alpha1.MaxRetriesAnnotation:   "0",
	}, nil)
	createMembers(t, env, ns, "probe", 2, 1, func(i int, b *sandboxtest.PodBuilder) {
		if i == 1 {
			b.InitContainer("init").Annotate(kubelet.AnnotationFailInit, "true").RestartPolicy(corev1.RestartPolicyOnFailure)
		}
	})
	advancePast(t, env, m, "podgroup/probe", ns, "Starting")
	var attempt musterv1alpha1.AttemptRecord
	env.WaitFor(t, "the group to fail at its start-timeout", func(context.Context) (bool, error) {
		f := gather(t, env, "podgroup/probe", ns)
		if f.Lifecycle == nil || f.Lifecycle.Phase != "Failed" || len(f.Lifecycle.Attempts) != 1 {
			return false, nil
		}
		attempt = f.Lifecycle.Attempts[0]
		return true, nil
	})
	// The cleanup (until no member is bound) counts too: wait until it is observed,
	// in the same pass as the last of the held seconds.
	env.WaitFor(t, "the group's cleanup observed", func(context.Context) (bool, error) {
		return scrape(t, env, addr, cleanupCount) > cleanups, nil
	})
	got := scrape(t, env, addr, heldGPU) - before
	bound := attempt.EndedAt.Sub(attempt.AdmittedAt.Time).Seconds()
	want := 2 * bound
	// The counter may be off by a reconcile period at each end, and the attempt's
	// times are recorded in whole seconds: bound itself may be off by up to a second.
	const reconcilePeriod, recordedIn = 1.0, 1.0
	if tolerance := 2 * (reconcilePeriod + recordedIn); math.Abs(got-want) > tolerance {
		t.Errorf("held GPU-seconds grew by %.2f; want 2 GPUs × %.2f s bound = %.2f, within %.0f", got, bound, want, tolerance)
	}
	t.Logf("held GPU-seconds: %.2f (2 GPUs × %.2f s from admission to eviction)", got, bound)
}

// TestWaitingGroupHoldsNothing: in the two-jobs case the waiting group adds nothing to
// the held resource-seconds while the first group runs.
func TestWaitingGroupHoldsNothing(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "two", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	addr, m := startClockedMuster(t, env)
	ns := namespace(t, env, "metrics-two-jobs")
	runFor := func(_ int, b *sandboxtest.PodBuilder) { b.Annotate(kubelet.AnnotationRunFor, "20s") }
	podGroup(t, env, ns, "first", 2, nil, nil)
	createMembers(t, env, ns, "first", 2, 1, runFor)
	waitExplain(t, env, "podgroup/first", ns, phase("Running"))
	podGroup(t, env, ns, "second", 2, nil, nil)
	createMembers(t, env, ns, "second", 2, 1, runFor)
	waitExplain(t, env, "podgroup/second", ns, phase("Queued"))
	start := scrape(t, env, addr, heldGPU)
	// Muster's clock moves 10 s (the first group runs on the kubelet's real clock, and
	// neither group has a timer); the advance returns once muster's loop has passed
	// at the new time and recorded that pass's metrics.
	m.AdvanceClock(t, 10*time.Second)
	f := gather(t, env, "podgroup/second", ns)
	if f.Lifecycle == nil || f.Lifecycle.Phase != "Queued" {
		t.Fatalf("expected the second group still Queued, found %+v", f.Lifecycle)
	}
	if got := scrape(t, env, addr, heldGPU) - start; got != 0 {
		t.Errorf("held GPU-seconds grew by %v while the second group waited; want 0", got)
	}
	for _, p := range f.Members {
		if p.Spec.NodeName != "" {
			t.Errorf("waiting member %s is bound to %s", p.Name, p.Spec.NodeName)
		}
	}
}

// TestCleanupSecondsIncludeTheMembersStopping: the cleanup time after a failure runs
// until the evicted members are gone from their nodes, so it includes the time their
// containers take to stop (here 5 s, a SIGTERM handler that checkpoints), and it ends
// within their grace period (the default 30 s). The start-timeout comes by an advance
// of muster's clock; the clock does not move during the cleanup.
func TestCleanupSecondsIncludeTheMembersStopping(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "stopping", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	addr, m := startClockedMuster(t, env)
	ns := namespace(t, env, "metrics-cleanup")
	const count, sum = cleanupCount, "muster_group_cleanup_seconds_sum"
	countBefore, sumBefore := scrape(t, env, addr, count), scrape(t, env, addr, sum)
	podGroup(t, env, ns, "slow", 2, map[string]string{
		musterv1alpha1.StartTimeoutAnnotation: "10m",
		musterv1alpha1.MaxRetriesAnnotation:   "0",
	}, nil)
	createMembers(t, env, ns, "slow", 2, 1, func(_ int, b *sandboxtest.PodBuilder) {
		b.Annotate(kubelet.AnnotationReadyAfter, "1h").Annotate(kubelet.AnnotationStopAfter, "5s")
	})
	advancePast(t, env, m, "podgroup/slow", ns, "Starting")
	env.WaitFor(t, "a cleanup observed", func(context.Context) (bool, error) {
		return scrape(t, env, addr, count) > countBefore, nil
	})
	if got := scrape(t, env, addr, count) - countBefore; got != 1 {
		t.Fatalf("expected 1 cleanup observed, found %v", got)
	}
	took := scrape(t, env, addr, sum) - sumBefore
	if took < 5 || took > 30 {
		t.Errorf("cleanup took %.2f s; want at least the 5 s the members take to stop, and at most their 30 s grace period", took)
	}
	t.Logf("cleanup after the start timeout: %.2f s", took)
}

// TestExpectedStartOfAQueuedGroup: the first group runs and declares an hour; the
// second, queued behind it for the same GPUs, gets its expected start from muster's
// forecast, when the first is expected to end: in its status record, in explain step 4,
// and in muster_group_expected_start_timestamp_seconds. muster's clock is advanced past
// the forecast interval (engine.DefaultForecastEvery), the most a new group waits for
// the next forecast.
func TestExpectedStartOfAQueuedGroup(t *testing.T) {
	env := sandboxtest.Shared(t)
	env.CreateNodes(t, sandbox.NodePool{Name: "forecast", Count: 2, CPU: "16", Memory: "64Gi", GPUs: 1})
	addr, m := startClockedMuster(t, env)
	ns := namespace(t, env, "metrics-expected-start")
	before := m.Now(t)
	podGroup(t, env, ns, "first", 2, nil, nil)
	createMembers(t, env, ns, "first", 2, 1, func(_ int, b *sandboxtest.PodBuilder) {
		b.Annotate("muster.dev/expected-runtime", "1h")
	})
	waitExplain(t, env, "podgroup/first", ns, phase("Running"))
	after := m.Now(t) // the first group became Running in between
	podGroup(t, env, ns, "second", 2, nil, nil)
	createMembers(t, env, ns, "second", 2, 1, nil)
	waitExplain(t, env, "podgroup/second", ns, phase("Queued"))
	m.AdvanceClock(t, engine.DefaultForecastEvery+time.Second)
	r := waitExplain(t, env, "podgroup/second", ns, func(f explain.Facts) bool {
		return f.Lifecycle != nil && f.Lifecycle.ExpectedStart != nil
	})
	f := gather(t, env, "podgroup/second", ns)
	// The record's times are to the second.
	if got := f.Lifecycle.ExpectedStart.Time; got.Before(before.Add(time.Hour).Truncate(time.Second)) || got.After(after.Add(time.Hour)) {
		t.Errorf("second: expected start %v (%q); want an hour after the first became Running, in [%v, %v]",
			got, f.Lifecycle.ExpectedStartUnknown, before.Add(time.Hour), after.Add(time.Hour))
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if line := "expected start: " + f.Lifecycle.ExpectedStart.UTC().Format(time.RFC3339); !strings.Contains(b.String(), line) {
		t.Errorf("explain does not say %q:\n%s", line, b.String())
	}
	series := fmt.Sprintf(`muster_group_expected_start_timestamp_seconds{group="%s/second",queue="default"}`, ns)
	if got := scrape(t, env, addr, series); got != float64(f.Lifecycle.ExpectedStart.Unix()) {
		t.Errorf("%s = %v, want %d", series, got, f.Lifecycle.ExpectedStart.Unix())
	}
}
