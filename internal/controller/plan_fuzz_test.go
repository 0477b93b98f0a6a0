package controller

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// FuzzDecodePlan decodes any text as a muster.dev/placement annotation, as recovery reads
// it from a bound pod (anyone who can write the pod can write it). A plan it accepts is
// well-formed (checkPlan, and its group key reads back as itself) and survives being
// carried again: planAnnotations encodes it to a value that decodes to the same plan. A
// plan it refuses gets an error that says so. It never panics.
func FuzzDecodePlan(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := decodePlan(raw)
		if err != nil {
			if p != nil || !strings.Contains(err.Error(), "plan") {
				t.Fatalf("refused with plan %+v and error %q: want no plan and an error about the plan", p, err)
			}
			return
		}
		if err := checkPlan(p); err != nil || refOfKey(p.Group).Key() != p.Group {
			t.Fatalf("accepted a malformed plan %+v: %v", p, err)
		}
		annotations, err := fuzzScheduler.planAnnotations(*p)
		if err != nil {
			return // too large to carry: the binder binds without it and says so
		}
		back := carriedPlan(t, annotations[musterv1alpha1.PlacementAnnotation])
		p.Signature = ""
		if d := cmp.Diff(p, back); d != "" {
			t.Fatalf("an accepted plan, carried again, changed (-first +again):\n%s", d)
		}
	})
}

// fuzzScheduler signs the plans the fuzz targets carry, with a key of zeros.
var fuzzScheduler = &binder{signer: signer{key: make([]byte, signingKeyBytes)}}

// carriedPlan decodes a plan muster signed and checks that it verifies on each pod it
// places (in the group's namespace, bound to its node): muster trusts the plans it
// writes. It returns the plan without its signature.
func carriedPlan(t *testing.T, raw string) *Plan {
	t.Helper()
	p, err := decodePlan(raw)
	if err != nil {
		t.Fatalf("an accepted plan, carried again, is refused: %v", err)
	}
	ns := refOfKey(p.Group).Namespace
	for name, a := range p.Pods {
		carrier := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: a.UID}, Spec: corev1.PodSpec{NodeName: a.Node}}
		if _, bad := fuzzScheduler.signer.verifyPlan(carrier, raw); bad != nil {
			t.Fatalf("a plan muster signed does not verify on its carrier %s: %+v", name, bad)
		}
	}
	p.Signature = ""
	return p
}

// FuzzPlanRoundTrip builds a plan from the fuzzer's values, carries it (planAnnotations)
// and decodes it: a well-formed plan comes back as it was; a malformed one is refused,
// never taken for another plan.
func FuzzPlanRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, group, pod, node, uid string, attempt int, members uint8) {
		if !utf8.ValidString(group + pod + node + uid) {
			return // the API server accepts only UTF-8 text
		}
		plan := Plan{Group: group, Attempt: attempt, Pods: map[string]Assignment{}}
		for i := range int(members % 16) {
			plan.Pods[fmt.Sprintf("%s%d", pod, i)] = Assignment{Node: node, UID: types.UID(fmt.Sprint(uid, i))}
		}
		annotations, err := fuzzScheduler.planAnnotations(plan)
		if err != nil {
			t.Fatalf("carrying a plan of %d members: %v", len(plan.Pods), err)
		}
		back, err := decodePlan(annotations[musterv1alpha1.PlacementAnnotation])
		if back != nil {
			back.Signature = ""
		}
		if want := checkPlan(&plan); want != nil {
			if err == nil {
				t.Fatalf("a malformed plan (%v) was accepted as %+v", want, back)
			}
			return
		}
		if err != nil {
			t.Fatalf("a well-formed plan was refused: %v", err)
		}
		if d := cmp.Diff(&plan, back); d != "" {
			t.Fatalf("the plan read back differs (-written +read):\n%s", d)
		}
	})
}

// TestDecodePlanRefuses: a plan whose group key, attempt or members are malformed is
// refused with an error naming the field and the value; recovery (findPlans) then
// ignores it instead of acting on what it says. Before decodePlan, any JSON with a
// non-empty group was taken, "train" included (a key with no source and no namespace).
func TestDecodePlanRefuses(t *testing.T) {
	member := `"pods":{"a-0":{"node":"n-0","uid":"u"}}`
	for _, tc := range []struct{ raw, want string }{
		{`{"group":"train","attempt":1,` + member + `}`, `group: "train"`},
		{`{"group":"Other/ml/a","attempt":1,` + member + `}`, `group: "Other/ml/a"`},
		{`{"group":"Labels/ml/a/b","attempt":1,` + member + `}`, `group: "Labels/ml/a/b"`},
		{`{"group":"Labels/ML/a","attempt":1,` + member + `}`, `group: "Labels/ML/a"`},
		{`{"group":"Native/ml/My_Group","attempt":1,` + member + `}`, `group: "Native/ml/My_Group"`},
		{`{"group":"Labels/ml/a","attempt":0,` + member + `}`, `attempt: 0`},
		{`{"group":"Labels/ml/a","attempt":1,"pods":{}}`, `pods: empty`},
		{`{"group":"Labels/ml/a","attempt":1,"pods":{"a-0":{"node":"","uid":"u"}}}`, `pods[a-0].node: ""`},
		{`{"group":"Labels/ml/a","attempt":1,"pods":{"a-0":{"node":"n-0"}}}`, `pods[a-0].uid: empty`},
		{`{"group":"Labels/ml/a","attempt":1,"pods":{"A 0":{"node":"n-0","uid":"u"}}}`, `pods: "A 0"`},
		{`{"group":`, `decoding the plan`},
	} {
		if p, err := decodePlan(tc.raw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodePlan(%s) = %+v, %v: expected an error naming %s", tc.raw, p, err, tc.want)
		}
	}
	// A plain group's name is a label value, which may hold capitals and '_'.
	for _, group := range []string{"Labels/ml/a", "Labels/ml/My_Group", "Single/ml/a-0"} {
		p, err := decodePlan(`{"group":"` + group + `","attempt":1,` + member + `}`)
		if err != nil || p.Group != group || p.Pods["a-0"].Node != "n-0" {
			t.Errorf("a well-formed plan of %s: expected it decoded, found %+v, %v", group, p, err)
		}
	}
}
