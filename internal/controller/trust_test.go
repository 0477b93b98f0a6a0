package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/muster-sched/muster/internal/metrics"
)

// testSigner returns a signer with a fixed key.
func testSigner(b byte) signer {
	key := make([]byte, signingKeyBytes)
	for i := range key {
		key[i] = b
	}
	return signer{key: key}
}

// recordOf returns a ConfigMap recording pod p, signed by g, as record writes one.
func recordOf(t *testing.T, g signer, p *corev1.Pod) *corev1.ConfigMap {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	name := recordName(p.Namespace, p.Name)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "muster-system"},
		Data: map[string]string{recordPodKey: string(data), recordUIDKey: "old-uid",
			recordSignatureKey: g.signRecord(name, string(data), "old-uid")},
	}
}

// TestVerifyRecord: a record muster wrote verifies; one that is unsigned, signed with
// another key, edited after signing, renamed, or that records another scheduler's pod
// or a pod bound to a node is refused, with the reason.
func TestVerifyRecord(t *testing.T) {
	g := testSigner(1)
	pod := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w-0"}, Spec: corev1.PodSpec{SchedulerName: "muster"}}
	}
	for _, tc := range []struct {
		name string
		cm   func() *corev1.ConfigMap
		want string // "" = trusted
	}{
		{"muster's record", func() *corev1.ConfigMap { return recordOf(t, g, pod()) }, ""},
		{"unsigned", func() *corev1.ConfigMap {
			cm := recordOf(t, g, pod())
			delete(cm.Data, recordSignatureKey)
			return cm
		}, UntrustedUnsigned},
		{"another key", func() *corev1.ConfigMap { return recordOf(t, testSigner(2), pod()) }, UntrustedBadSignature},
		{"edited after signing", func() *corev1.ConfigMap {
			cm := recordOf(t, g, pod())
			cm.Data[recordUIDKey] = "other-uid"
			return cm
		}, UntrustedBadSignature},
		{"renamed", func() *corev1.ConfigMap {
			cm := recordOf(t, g, pod())
			cm.Name = recordName("b", "w-0")
			return cm
		}, UntrustedBadSignature},
		{"signed under another pod's name", func() *corev1.ConfigMap {
			p := pod()
			cm := recordOf(t, g, p)
			cm.Name = recordName("b", "w-0")
			cm.Data[recordSignatureKey] = g.signRecord(cm.Name, cm.Data[recordPodKey], cm.Data[recordUIDKey])
			return cm
		}, UntrustedWrongName},
		{"another scheduler's pod", func() *corev1.ConfigMap {
			p := pod()
			p.Spec.SchedulerName = "default-scheduler"
			return recordOf(t, g, p)
		}, UntrustedNotOurs},
		{"a pod bound to a node", func() *corev1.ConfigMap {
			p := pod()
			p.Spec.NodeName = "node-1"
			return recordOf(t, g, p)
		}, UntrustedNodeNameSet},
		{"not a pod", func() *corev1.ConfigMap {
			cm := recordOf(t, g, pod())
			cm.Data[recordPodKey] = "{"
			cm.Data[recordSignatureKey] = g.signRecord(cm.Name, "{", cm.Data[recordUIDKey])
			return cm
		}, UntrustedMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, bad := g.verifyRecord(tc.cm(), []string{"muster"})
			switch {
			case tc.want == "" && bad != nil:
				t.Fatalf("expected the record trusted, found %v", bad)
			case tc.want == "" && (p == nil || p.Namespace != "a" || p.Name != "w-0"):
				t.Fatalf("expected pod a/w-0 back, found %+v", p)
			case tc.want != "" && (bad == nil || bad.reason != tc.want):
				t.Fatalf("expected the record refused, %s, found %v", tc.want, bad)
			}
		})
	}
}

// TestVerifyPlan: a plan muster signed verifies on the pod it was made for; on a pod
// of another namespace, another UID or another node, unsigned, forged, or edited after
// signing, it is refused with the reason.
func TestVerifyPlan(t *testing.T) {
	g := testSigner(1)
	carrier := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w-0", UID: "uid-0"},
			Spec:       corev1.PodSpec{SchedulerName: "muster", NodeName: "node-0"},
		}
	}
	plan := func() Plan {
		return Plan{Group: "Labels/a/gang", Attempt: 1, Pods: map[string]Assignment{
			"w-0": {Node: "node-0", UID: "uid-0"}, "w-1": {Node: "node-1", UID: "uid-1"},
		}}
	}
	signed := func(p Plan, g signer) string {
		if err := g.signPlan(&p); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(p)
		return string(data)
	}
	for _, tc := range []struct {
		name    string
		raw     string
		carrier func(*corev1.Pod)
		want    string
	}{
		{"muster's plan on its member", signed(plan(), g), nil, ""},
		{"unsigned", func() string { data, _ := json.Marshal(plan()); return string(data) }(), nil, UntrustedUnsigned},
		{"another key", signed(plan(), testSigner(9)), nil, UntrustedBadSignature},
		{"edited after signing", func() string {
			var p Plan
			_ = json.Unmarshal([]byte(signed(plan(), g)), &p)
			p.Pods["w-1"] = Assignment{Node: "node-7", UID: "uid-1"}
			data, _ := json.Marshal(p)
			return string(data)
		}(), nil, UntrustedBadSignature},
		{"a group of another namespace", func() string {
			p := plan()
			p.Group = "Labels/b/gang"
			return signed(p, g)
		}(), nil, UntrustedWrongCarrier},
		{"copied onto another pod", signed(plan(), g), func(p *corev1.Pod) { p.Name, p.UID = "x", "uid-x" }, UntrustedWrongCarrier},
		{"copied onto a pod of the same name", signed(plan(), g), func(p *corev1.Pod) { p.UID = "uid-new" }, UntrustedWrongCarrier},
		{"carrier on another node", signed(plan(), g), func(p *corev1.Pod) { p.Spec.NodeName = "node-9" }, UntrustedWrongCarrier},
		{"not JSON", "{", nil, UntrustedMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := carrier()
			if tc.carrier != nil {
				tc.carrier(c)
			}
			p, bad := g.verifyPlan(c, tc.raw)
			switch {
			case tc.want == "" && bad != nil:
				t.Fatalf("expected the plan trusted, found %v", bad)
			case tc.want == "" && len(p.Pods) != 2:
				t.Fatalf("expected the plan's 2 pods back, found %+v", p)
			case tc.want != "" && (bad == nil || bad.reason != tc.want):
				t.Fatalf("expected the plan refused, %s, found %v", tc.want, bad)
			}
		})
	}
}

// TestUntrustedIsCounted: a record or plan that fails verification is counted in
// muster_untrusted_records_total by kind and reason, and gets an UntrustedRecord Event.
func TestUntrustedIsCounted(t *testing.T) {
	rec := events.NewFakeRecorder(4)
	s := &kit{metrics: metrics.New(prometheus.NewRegistry()), recorder: rec}
	carrier := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}}
	_, bad := testSigner(1).verifyPlan(carrier, `{"group":"Labels/b/g","attempt":1,"pods":{"x":{"node":"n1","uid":"u1"}}}`)
	if bad == nil {
		t.Fatal("expected an unsigned plan refused")
	}
	s.untrusted(carrier, KindPlan, bad)
	s.untrusted(carrier, KindPlan, bad)
	if got := testutil.ToFloat64(s.metrics.Untrusted.WithLabelValues(KindPlan, UntrustedUnsigned)); got != 2 {
		t.Errorf("muster_untrusted_records_total{kind=plan,reason=Unsigned}: expected 2, found %v", got)
	}
	if ev := <-rec.Events; !strings.Contains(ev, ReasonUntrustedRecord) || !strings.Contains(ev, UntrustedUnsigned) {
		t.Errorf("expected an UntrustedRecord Event naming the reason, found %q", ev)
	}
}
