package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/source"
)

// TestExpectedStartInWideGroups: a queued group's expected start from its record shows
// in -o wide as how long until it, "-" where muster does not know it; a running group
// shows none even if its record kept one.
func TestExpectedStartInWideGroups(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	row := func(name, phase string, start *metav1.Time, unknown string) GroupRow {
		rec := musterv1alpha1.GroupLifecycle{Phase: phase, Queue: "team", MinMember: 2, ExpectedStart: start, ExpectedStartUnknown: unknown}
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		ann := map[string]string{musterv1alpha1.LifecycleAnnotation: string(data)}
		return groupRow(source.Ref{Source: "Coscheduling", Namespace: "ns", Name: name}, ann, nil, nil, now)
	}
	soon := metav1.NewTime(now.Add(25 * time.Minute))
	rows := []GroupRow{
		row("first", "Queued", &soon, ""),
		row("second", "Queued", nil, "it does not hold the reservation"),
		row("running", "Running", &soon, ""),
	}
	if rows[1].ExpectedStartUnknown == "" || rows[2].ExpectedStart != nil {
		t.Errorf("rows: expected the second's reason kept and no start for the running group, found %+v", rows)
	}
	var out bytes.Buffer
	if err := WriteGroups(&out, rows, false, true, now); err != nil {
		t.Fatal(err)
	}
	want := `NAME PHASE QUEUE READY ATTEMPT WAITING GPU-SECONDS API EXPECTED-START REASON
first Queued team 0/2 0 - 0 Coscheduling in 25m -
second Queued team 0/2 0 - 0 Coscheduling - -
running Running team 0/2 0 - 0 Coscheduling - -
`
	if diff := cmp.Diff(want, squeeze(out.String())); diff != "" {
		t.Errorf("get groups -o wide (-want +got):\n%s", diff)
	}
}

// squeeze joins each line's fields with single spaces.
func squeeze(table string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		b.WriteString(strings.Join(strings.Fields(line), " ") + "\n")
	}
	return b.String()
}
