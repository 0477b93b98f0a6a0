package bench

import (
	"strings"
	"testing"
	"time"
)

// TestDeepFigures checks the deep-queue figures on a hand-made timeline: nodes n0,
// n1 and n2 are released at 0 s, 1 s and 2 s; single-pod group a binds on n0 at
// 0.5 s; gang g (two pods here) binds on n1 at 1.2 s and on n2 at 3 s, whole at 3 s;
// b was bound on n2 before n2's release (it does not count for n2) and c never.
func TestDeepFigures(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tl := timeline{
		job:      map[string]string{"a-0": "a", "g-0": "g", "g-1": "g", "b-0": "b", "c-0": "c"},
		node:     map[string]string{"a-0": "n0", "g-0": "n1", "g-1": "n2", "b-0": "n2"},
		bound:    map[string]time.Time{"a-0": at(0.5), "g-0": at(1.2), "g-1": at(3), "b-0": at(1.5)},
		released: map[string]time.Time{"n0": at(0), "n1": at(1), "n2": at(2), "n3": at(2)},
	}
	got := tl.deepFigures(map[string]int{"a": 1, "g": 2, "b": 1, "c": 1})
	// Admitted a (0.5 s), b (1.5 s), g (3 s): 3 groups over 3 s from the first release.
	// Latencies: n0 0.5 s, n1 2 s (g whole at 3 s), n2 1 s (g-1; b was before), n3
	// none.
	want := DeepFigures{
		Groups: 4, Admitted: 3, Releases: 4, Used: 3, Drain: 3 * time.Second, AdmissionsPerSecond: 1,
		ReleaseP50: time.Second, ReleaseP99: 2 * time.Second,
	}
	if got != want {
		t.Errorf("deepFigures: expected %+v, found %+v", want, got)
	}
	// Refill: n4, released at 10 s, gets 8 one-GPU pods at 10.5 … 14 s (full at 14 s);
	// n5, released at 10 s, gets 7 (never full); n6 gets 8, one before its release.
	tl = timeline{job: map[string]string{}, node: map[string]string{}, bound: map[string]time.Time{},
		released: map[string]time.Time{"n4": at(10), "n5": at(10), "n6": at(10)}}
	for i := range 8 {
		for node, times := range map[string][]float64{
			"n4": {10.5, 11, 11.5, 12, 12.5, 13, 13.5, 14}, "n5": {11, 11, 11, 11, 11, 11, 11}, "n6": {9, 11, 11, 11, 11, 11, 11, 11},
		} {
			if i < len(times) {
				pod := node + "-" + string(rune('0'+i))
				tl.job[pod], tl.node[pod], tl.bound[pod] = pod, node, at(times[i])
			}
		}
	}
	if n, p50, p99 := tl.fillTimes(); n != 1 || p50 != 4*time.Second || p99 != 4*time.Second {
		t.Errorf("fillTimes: expected n4 alone, full 4 s after its release, found %d nodes, p50 %v, p99 %v", n, p50, p99)
	}
	if got := (timeline{}).deepFigures(map[string]int{"a": 1}); got != (DeepFigures{Groups: 1}) {
		t.Errorf("deepFigures of an empty timeline: expected only the group count, found %+v", got)
	}
}

// TestNearestRank checks the percentiles on 1..100 ms and on one value.
func TestNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := nearestRank(ds, c.p); got != c.want {
			t.Errorf("nearestRank(1..100 ms, %v): expected %v, found %v", c.p, c.want, got)
		}
	}
	if got := nearestRank([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("nearestRank of one value: expected it, found %v", got)
	}
}

// TestDeepWorkload checks the queued workload: the gangs spread among the
// single-pod groups, every group a PodGroup of its size for gang runners, none
// for plain runners.
func TestDeepWorkload(t *testing.T) {
	sc := deepScenario(DeepQueue{Nodes: 2, Groups: 6, Gangs: 2})
	names, sizes := sc.Deep.groupOrder()
	if got := strings.Join(names, ","); got != "gang-0,one-0,one-1,one-2,gang-1,one-3,one-4,one-5" {
		t.Errorf("group order: expected the gangs before one-0 and one-3, found %s", got)
	}
	if sizes["gang-1"] != 8 || sizes["one-5"] != 1 {
		t.Errorf("sizes: expected 8 for gangs and 1 for single-pod groups, found %v", sizes)
	}
	gang := sc.build("ns", podSpec{schedulerName: "muster", gang: true})
	if len(gang.groups) != 8 || len(gang.pods) != 22 || sc.Pods() != 22 {
		t.Errorf("gang workload: expected 8 PodGroups and 22 pods, found %d, %d (Pods %d)", len(gang.groups), len(gang.pods), sc.Pods())
	}
	if mc := gang.groups[0].Spec.SchedulingPolicy.Gang.MinCount; mc != 8 {
		t.Errorf("gang-0 PodGroup: expected minCount 8, found %d", mc)
	}
	if mc := gang.groups[1].Spec.SchedulingPolicy.Gang.MinCount; mc != 1 {
		t.Errorf("one-0 PodGroup: expected minCount 1, found %d", mc)
	}
	if p := gang.pods[8]; p.Name != "one-0-0" || p.Labels[LabelJob] != "one-0" || *p.Spec.SchedulingGroup.PodGroupName != "one-0" {
		t.Errorf("pod 8: expected one-0-0 of group one-0, found %s of %v", p.Name, p.Labels)
	}
	plain := sc.build("ns", podSpec{schedulerName: "default-scheduler"})
	if len(plain.groups) != 0 || len(plain.pods) != 22 || plain.pods[0].Spec.SchedulingGroup != nil {
		t.Errorf("plain workload: expected 22 pods and no groups, found %d groups, %d pods", len(plain.groups), len(plain.pods))
	}
	if h := holderPod("ns", "gpu-0"); h.Spec.NodeName != "gpu-0" || h.Labels[LabelHolder] != "gpu-0" || h.Labels[LabelJob] != "" {
		t.Errorf("holder: expected bound to gpu-0, of no job, found %+v", h.ObjectMeta)
	}
}

// TestDeepPlan checks the deep-queue sizes from Options and the runners it gets.
func TestDeepPlan(t *testing.T) {
	p, err := makePlan(Options{Scenarios: []string{ScenarioDeepQueue, ScenarioCeiling}})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.scenarios[0].Deep; d == nil || *d != (DeepQueue{Nodes: 1000, Groups: 10000, Gangs: 500}) {
		t.Errorf("default sizes: expected issue 21's, found %+v", d)
	}
	if got := strings.Join(p.runners[ScenarioDeepQueue], ","); strings.Contains(got, RunnerCeiling) {
		t.Errorf("deep-queue runners: expected no ceiling, found %s", got)
	}
	p, err = makePlan(Options{Scenarios: []string{ScenarioDeepQueue}, DeepNodes: 100, DeepGroups: 1000, DeepGangs: -1})
	if err != nil {
		t.Fatal(err)
	}
	if d := *p.scenarios[0].Deep; d != (DeepQueue{Nodes: 100, Groups: 1000}) {
		t.Errorf("sizes: expected 100 nodes, 1000 groups, no gangs, found %+v", d)
	}
	for _, bad := range []Options{{DeepNodes: -3}, {DeepGroups: -1, DeepGangs: -1}} {
		bad.Scenarios = []string{ScenarioDeepQueue}
		if _, err := makePlan(bad); err == nil || !strings.Contains(err.Error(), "deep-queue") {
			t.Errorf("makePlan(%+v): expected an error naming deep-queue, found %v", bad, err)
		}
	}
}

// TestDeepRows checks the table's deep-queue rows and the muster/gang ratio.
func TestDeepRows(t *testing.T) {
	run := func(runner string, perSecond float64, p99 time.Duration) Result {
		return Result{Scenario: ScenarioDeepQueue, Runner: runner, Round: 1, Deep: &DeepFigures{
			Groups: 10, Admitted: 10, Releases: 4, Used: 4, AdmissionsPerSecond: perSecond, ReleaseP50: p99 / 2, ReleaseP99: p99,
		}}
	}
	rep := &Report{Rounds: 1, Results: []Result{run(RunnerKubeSchedulerGang, 2, 4*time.Second), run(RunnerMusterQPS, 5, time.Second)}}
	rows := rep.Rows()
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	found := map[string][]string{}
	for _, r := range rows[1:] {
		found[r[1]] = r
	}
	ratio := col[RunnerMusterQPS+"/"+RunnerKubeSchedulerGang]
	if r := found["admissions/s (first release → last admission)"]; r == nil || r[col[RunnerMusterQPS]] != "5.00" || r[ratio] != "2.50" {
		t.Errorf("admissions/s row: expected 5.00 and ratio 2.50, found %v", r)
	}
	if r := found["release → next admission on the node, p99 (s)"]; r == nil || r[col[RunnerKubeSchedulerGang]] != "4.000" || r[ratio] != "0.25" {
		t.Errorf("p99 row: expected 4.000 and ratio 0.25, found %v", r)
	}
}
