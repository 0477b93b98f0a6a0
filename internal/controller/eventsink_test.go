package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/muster-sched/muster/internal/metrics"
)

// TestLimitedRecorderDropsBeyondItsBudget: with a budget of 1 a second and bursts of
// 3, five Events at once pass three and count two dropped by reason; a second later
// one more passes. Dropping at the source is what keeps client-go's broadcaster from
// holding a goroutine per Event made faster than the client writes them.
func TestLimitedRecorderDropsBeyondItsBudget(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	fake := events.NewFakeRecorder(10)
	m := metrics.New(prometheus.NewRegistry())
	r := limitedRecorder{next: fake, limit: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(1, 3, clk), dropped: m.EventsDropped}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, reason := range []string{"Admitted", "Admitted", "PodsReady", "Admitted", "PodsReady"} {
		r.Eventf(pod, nil, corev1.EventTypeNormal, reason, "Scheduling", "%s", "note")
	}
	if got := len(fake.Events); got != 3 {
		t.Errorf("expected 3 Events passed within the burst, found %d", got)
	}
	if got := testutil.ToFloat64(m.EventsDropped.WithLabelValues("Admitted")); got != 1 {
		t.Errorf("dropped Admitted: expected 1, found %v", got)
	}
	if got := testutil.ToFloat64(m.EventsDropped.WithLabelValues("PodsReady")); got != 1 {
		t.Errorf("dropped PodsReady: expected 1, found %v", got)
	}
	clk.Step(time.Second)
	r.Eventf(pod, nil, corev1.EventTypeWarning, "StartTimeout", "Scheduling", "%s", "late")
	if got := len(fake.Events); got != 4 {
		t.Errorf("a second later: expected a fourth Event passed, found %d in all", got)
	}
	if got := <-fake.Events; got != "Normal Admitted note" {
		t.Errorf("first Event: expected %q, found %q", "Normal Admitted note", got)
	}
}
