package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestSlope checks the least-squares slope on samples on a line, with warm-up
// samples off it that must be left out, and the cases with too few samples.
func TestSlope(t *testing.T) {
	var samples []SoakSample
	// Warm-up: a climb from 0 to 90 MiB over the first minute.
	for s := 0; s < 60; s += 10 {
		samples = append(samples, SoakSample{At: time.Duration(s) * time.Second, RSS: uint64(s*3/2) << 20})
	}
	// After: 100 MiB + 2 MiB/min, ±1 MiB alternately (which the fit averages out).
	for i := range 13 {
		at := time.Minute + time.Duration(i)*30*time.Second
		noise := 1.0
		if i%2 == 1 {
			noise = -1
		}
		samples = append(samples, SoakSample{At: at, RSS: uint64((100 + 2*at.Minutes() + noise) * (1 << 20))})
	}
	got, ok := Slope(samples, time.Minute, rssMiB)
	if !ok || math.Abs(got-2) > 0.05 {
		t.Errorf("slope after the warm-up: expected 2 MiB/min (±0.05), found %v (ok %v)", got, ok)
	}
	if all, _ := Slope(samples, 0, rssMiB); all < 5 {
		t.Errorf("slope with the warm-up: expected the climb to steepen it past 5 MiB/min, found %v", all)
	}
	if _, ok := Slope(samples, time.Hour, rssMiB); ok {
		t.Error("slope of no sample: expected none, found one")
	}
	if _, ok := Slope([]SoakSample{{At: time.Minute}, {At: time.Minute, RSS: 1 << 20}}, 0, rssMiB); ok {
		t.Error("slope of two samples at one time: expected none, found one")
	}
	first, last, most, ok := spread(samples, time.Minute, rssMiB)
	if !ok || first != 103 || last != 115 || most != 115 {
		t.Errorf("spread after the warm-up: expected 103, 115, 115, found %v, %v, %v (ok %v)", first, last, most, ok)
	}
}

// TestSoakPlan checks the soak's defaults and that bad settings name the option.
func TestSoakPlan(t *testing.T) {
	p, err := makePlan(Options{})
	if err != nil || p.soak != nil {
		t.Fatalf("default plan: expected no soak, found %+v (%v)", p.soak, err)
	}
	p, err = makePlan(Options{Scenarios: []string{ScenarioSoak}})
	if err != nil || p.soak == nil || len(p.scenarios) != 0 {
		t.Fatalf("soak plan: expected the soak alone, found %+v, %d scenarios (%v)", p.soak, len(p.scenarios), err)
	}
	if want := (soakPlan{duration: 10 * time.Minute, sample: 10 * time.Second, nodes: 1000, live: 32}); *p.soak != want {
		t.Errorf("soak defaults: expected %+v, found %+v", want, *p.soak)
	}
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{SoakDuration: -time.Second}, "SoakDuration"},
		{Options{SoakLive: -1}, "SoakLive"},
		{Options{SoakNodes: 2, SoakLive: 2}, "SoakLive: expected at most 1 gangs in flight on 16 GPUs, found 2"},
	} {
		c.opts.Scenarios = []string{ScenarioSoak}
		if _, err := makePlan(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("makePlan(%+v): expected an error naming %q, found %v", c.opts, c.want, err)
		}
	}
}

// TestSoakShort runs the soak's machinery for 20 s on 16 nodes: gangs are created and
// deleted, every one gets Ready, muster's memory and tracked groups are sampled, and
// once every gang is deleted muster tracks none. It checks no speed and no slope.
func TestSoakShort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Options{
		Scenarios: []string{ScenarioSoak}, SoakDuration: 20 * time.Second, SoakSample: 2 * time.Second,
		SoakNodes: 16, SoakLive: 4, Progress: &progress, MusterBinary: sandboxtest.MusterBinary(t),
	})
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Soak
	if r == nil || r.Err != nil {
		t.Fatalf("expected a complete soak, found %+v", r)
	}
	// Each of the 4 slots went through at least two gangs.
	if r.Created < 8 || r.Deleted != r.Created || r.Stalled != 0 {
		t.Errorf("groups: expected at least 8 created, all deleted, none stalled, found %d created, %d deleted, %d stalled", r.Created, r.Deleted, r.Stalled)
	}
	if r.PodsBound < 4*r.Created {
		t.Errorf("pods bound: expected at least %d (4 per gang), found %d", 4*r.Created, r.PodsBound)
	}
	if len(r.Samples) < 5 {
		t.Errorf("samples: expected one every 2 s of 20 s, found %d", len(r.Samples))
	}
	most := 0.0
	for _, s := range r.Samples {
		if s.RSS == 0 || s.Heap == 0 || s.Goroutines == 0 {
			t.Errorf("sample at %s: expected RSS, heap and goroutines, found %d, %d, %v", s.At, s.RSS, s.Heap, s.Goroutines)
		}
		most = max(most, s.Tracked)
	}
	if most < 1 {
		t.Errorf("groups tracked during the churn: expected some, found at most %v", most)
	}
	if r.After == nil || r.After.Tracked != 0 {
		t.Errorf("after the churn: expected no group tracked, found %+v", r.After)
	}
	var text, md, csvOut bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), md.String()} {
		if !strings.Contains(out, "RSS after warm-up: first") || !strings.Contains(out, "MiB/min") || !strings.Contains(out, "after the churn") {
			t.Errorf("report: expected the soak's figures and samples, found\n%s", out)
		}
	}
	if err := r.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil || len(recs) != len(r.Samples)+2 {
		t.Errorf("CSV: expected a header, %d samples and the last, found %d records (%v)", len(r.Samples), len(recs), err)
	}
	t.Log("\n" + text.String())
}
