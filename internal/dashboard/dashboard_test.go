package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/source"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func node(name string, gpus int64, ready bool) corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{gpu: *resource.NewQuantity(gpus, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("8")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
	}}
}

func pod(ns, name, group, nodeName string, gpus int64) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec: corev1.PodSpec{SchedulerName: "muster", NodeName: nodeName, Containers: []corev1.Container{{
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{gpu: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if group != "" {
		p.Labels[musterv1alpha1.GroupLabel] = group
	}
	return p
}

// withRecord puts a lifecycle record of phase on the pod, as muster does for plain groups.
func withRecord(p corev1.Pod, rec musterv1alpha1.GroupLifecycle) corev1.Pod {
	raw, _ := json.Marshal(rec)
	p.Annotations = map[string]string{musterv1alpha1.LifecycleAnnotation: string(raw)}
	return p
}

// modelOf builds the model read() would from these objects, for muster serving the
// schedulerNames served ("muster" when none are given).
func modelOf(nodes []corev1.Node, pods []corev1.Pod, served ...string) *model {
	if len(served) == 0 {
		served = []string{"muster"}
	}
	m := &model{nodes: nodes, pods: pods, groups: map[string]*group{}}
	for i := range m.pods {
		p := &m.pods[i]
		if !slices.Contains(served, p.Spec.SchedulerName) {
			continue
		}
		g := m.group(source.GroupOf(p))
		g.pods = append(g.pods, p)
		if g.record == nil {
			g.readRecord(p.Annotations)
		}
	}
	for k := range m.groups {
		m.keys = append(m.keys, k)
	}
	return m
}

func holds(row NodeRow) []Hold {
	var out []Hold
	for _, c := range row.Cells {
		out = append(out, c.Hold)
	}
	return out
}

func TestHeatColoursEachDeviceByItsHolder(t *testing.T) {
	running := musterv1alpha1.GroupLifecycle{Phase: "Running", Queue: "q"}
	recovering := musterv1alpha1.GroupLifecycle{Phase: "Recovering", Queue: "q"}
	other := pod("ns", "other-0", "", "n1", 1)
	other.Spec.SchedulerName = "default-scheduler"
	deleting := withRecord(pod("ns", "b-1", "b", "n2", 1), running)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	done := withRecord(pod("ns", "a-9", "a", "n1", 1), running)
	done.Status.Phase = corev1.PodSucceeded
	m := modelOf(
		[]corev1.Node{node("n1", 4, true), node("n2", 2, true), node("n3", 2, false)},
		[]corev1.Pod{
			withRecord(pod("ns", "a-0", "a", "n1", 2), running),
			other, done,
			withRecord(pod("ns", "c-0", "c", "n2", 1), recovering),
			deleting,
			pod("ns", "s-0", "s", "n3", 1), // bound, no record yet
		})
	h := heat(m, []string{"muster"})
	got := map[string][]Hold{}
	for _, r := range h.Rows {
		got[r.Name] = holds(r)
	}
	want := map[string][]Hold{
		"n1": {Training, Training, Other, Free},
		"n2": {Held, Held},
		"n3": {Starting, Down},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cells (-want +got):\n%s", d)
	}
	if h.Rows[0].Cells[0].Link == "" || h.Rows[0].Cells[0].Group != "ns/a" || h.Rows[0].Cells[2].Link != "" {
		t.Errorf("n1's cells: %+v; want links to group ns/a only on its cells", h.Rows[0].Cells)
	}
	if want := "n1: 2 training, 1 other, 1 free"; h.Rows[0].Summary != want {
		t.Errorf("summary %q, want %q", h.Rows[0].Summary, want)
	}
}

func TestHeatCountsEveryNameMusterServes(t *testing.T) {
	ray := withRecord(pod("ns", "ray-0", "ray", "n1", 1), musterv1alpha1.GroupLifecycle{Phase: "Running", Queue: "q"})
	ray.Spec.SchedulerName = "scheduler-plugins-scheduler"
	nodes, pods := []corev1.Node{node("n1", 1, true)}, []corev1.Pod{ray}
	if got := holds(heat(modelOf(nodes, pods), []string{"muster"}).Rows[0]); got[0] != Other {
		t.Errorf("with muster serving only \"muster\": cell %v, want %v", got, Other)
	}
	served := []string{"muster", "scheduler-plugins-scheduler"}
	if got := holds(heat(modelOf(nodes, pods, served...), served).Rows[0]); got[0] != Training {
		t.Errorf("with muster serving %q: cell %v, want %v", served, got, Training)
	}
}

func TestAForgedRecordIsShownAsAProblem(t *testing.T) {
	p := pod("ns", "a-0", "a", "n1", 1)
	p.Annotations = map[string]string{musterv1alpha1.LifecycleAnnotation: `{"phase": 3`}
	m := modelOf([]corev1.Node{node("n1", 1, true)}, []corev1.Pod{p})
	g := m.groups[source.GroupOf(&p).Key()]
	if g.record != nil || g.recordProblem == "" {
		t.Fatalf("record %+v, problem %q; want no record and a problem", g.record, g.recordProblem)
	}
	if got := holds(heat(m, []string{"muster"}).Rows[0]); got[0] != Starting {
		t.Errorf("cell %v; a group with no readable record is shown as starting", got)
	}
}

func TestTimelineOfARetriedGroup(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	admitted := at(100)
	rec := musterv1alpha1.GroupLifecycle{Phase: "Running", MinMember: 2, Attempt: 2, AdmittedAt: &admitted,
		Attempts: []musterv1alpha1.AttemptRecord{{Number: 1, AdmittedAt: at(10), EndedAt: at(70), Stage: "Starting", Reason: "StartTimeout"}}}
	var pods []*corev1.Pod
	for i, ready := range []int{130, 140} {
		p := pod("ns", "a-"+string(rune('0'+i)), "a", "n1", 1)
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(101 + i)},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(ready)},
		}
		pods = append(pods, &p)
	}
	g := &group{ref: source.Ref{Source: engine.Labels, Namespace: "ns", Name: "a"}, record: &rec, pods: pods}
	pods[0].CreationTimestamp = at(0)
	var got []string
	for _, s := range timeline(g, t0.Add(200*time.Second)) {
		got = append(got, s.Stage+" "+s.Took)
	}
	want := []string{"queued 10s", "attempt 1 1m0s", "queued 30s", "binding 2s", "starting 38s", "Running 1m0s"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("timeline (-want +got):\n%s", d)
	}
}

func TestQueuesListPendingInAdmissionOrderAndWhatTheyLend(t *testing.T) {
	q := func(name string, quota, used, borrowed int64) musterv1alpha1.Queue {
		n := func(v int64) corev1.ResourceList {
			return corev1.ResourceList{gpu: *resource.NewQuantity(v, resource.DecimalSI)}
		}
		out := musterv1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: musterv1alpha1.QueueSpec{Cohort: "c", Quota: n(quota)},
			Status: musterv1alpha1.QueueStatus{Used: n(used)}}
		if borrowed > 0 {
			out.Status.Borrowed = n(borrowed)
		}
		return out
	}
	wait := musterv1alpha1.GroupLifecycle{Phase: "Queued", Queue: "lender", Waiting: "needs 4 GPUs", WaitingKind: "QuotaExceeded"}
	older := withRecord(pod("ns", "old-0", "old", "", 1), wait)
	older.CreationTimestamp = metav1.NewTime(t0)
	newer := withRecord(pod("ns", "new-0", "new", "", 1), wait)
	newer.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
	high := withRecord(pod("ns", "high-0", "high", "", 1), wait)
	high.CreationTimestamp = metav1.NewTime(t0.Add(2 * time.Minute))
	prio := int32(100)
	high.Spec.Priority = &prio
	reserved := wait
	reserved.ExpectedStart = &metav1.Time{Time: t0.Add(28 * time.Minute)}
	high = withRecord(high, reserved)
	unknown := wait
	unknown.ExpectedStartUnknown = "it does not hold the reservation"
	older = withRecord(older, unknown)
	m := modelOf(nil, []corev1.Pod{newer, older, high})
	m.queues = []musterv1alpha1.Queue{q("borrower", 4, 7, 3), q("lender", 8, 2, 0)}
	rows := queueRows(m, t0.Add(3*time.Minute))
	var order []string
	for _, p := range rows[1].Pending {
		order = append(order, strings.TrimSpace(p.Group+" "+p.Kind+" "+p.Starts))
	}
	want := []string{"ns/high QuotaExceeded expected start in 25m0s, at " + t0.Add(28*time.Minute).UTC().Format("15:04") + " UTC",
		"ns/old QuotaExceeded expected start unknown: it does not hold the reservation", "ns/new QuotaExceeded"}
	if d := cmp.Diff(want, order); d != "" {
		t.Errorf("pending order (-want +got):\n%s", d)
	}
	if got := rows[1].Resources[0]; got.Lent != "3" || got.Used != "2" || got.Quota != "8" {
		t.Errorf("lender's row %+v: want quota 8, used 2, lent 3", got)
	}
	if got := rows[0].Resources[0]; got.Borrowed != "3" || got.Lent != "" {
		t.Errorf("borrower's row %+v: want borrowed 3, lent none", got)
	}
}

func TestLedgerCountsHeldBeforeReadyPerQueueAndWindow(t *testing.T) {
	l := NewLedger()
	statuses := map[string]engine.Status{}
	status := func(k string) (engine.Status, bool) { s, ok := statuses[k]; return s, ok }
	step := func(at time.Time, key, queue string, held float64, released time.Duration) {
		statuses[key] = engine.Status{Queue: queue, HeldBeforeReady: map[corev1.ResourceName]float64{gpu: held}}
		out := engine.Output{Changed: []string{key}}
		if released > 0 {
			out.Released = []engine.Release{{Group: key, After: released}}
		}
		l.Stepped(at, out, status)
	}
	step(t0, "a", "qa", 10, 0)
	step(t0.Add(time.Minute), "a", "qa", 25, 0) // +15
	step(t0.Add(2*time.Hour), "a", "qa", 25, 0) // nothing new
	step(t0.Add(2*time.Hour), "b", "qb", 8, 4*time.Second)
	now := t0.Add(2*time.Hour + time.Minute)
	hour, _ := l.Costs(context.Background(), now, time.Hour)
	day, _ := l.Costs(context.Background(), now, 24*time.Hour)
	want := []Cost{{Queue: "qb", Held: []Amount{{"nvidia.com/gpu", 8}}, Cleanup: 4 * time.Second, Cleanups: 1}}
	if d := cmp.Diff(want, hour); d != "" {
		t.Errorf("last hour (-want +got):\n%s", d)
	}
	want = append([]Cost{{Queue: "qa", Held: []Amount{{"nvidia.com/gpu", 25}}}}, want...)
	if d := cmp.Diff(want, day); d != "" {
		t.Errorf("last day (-want +got):\n%s", d)
	}
	if got, _ := l.Costs(context.Background(), t0.Add(30*time.Hour), 24*time.Hour); len(got) != 0 {
		t.Errorf("a day later: %+v, want nothing", got)
	}
}

func TestGroupPageRefusesABadQuery(t *testing.T) {
	for _, q := range []string{"source=Nope&namespace=a&name=b", "source=Labels&name=b", ""} {
		v, _ := url.ParseQuery(q)
		if _, problem := refOf(v); problem == "" {
			t.Errorf("query %q accepted", q)
		}
	}
	v, _ := url.ParseQuery("source=Coscheduling&namespace=a&name=b")
	if ref, problem := refOf(v); problem != "" || groupLink(ref) != "group?name=b&namespace=a&source=Coscheduling" {
		t.Errorf("ref %+v, problem %q, link %q", ref, problem, groupLink(ref))
	}
}

func TestTheLedgerSurvivesBeingStoredAndRefusesABadOne(t *testing.T) {
	l := NewLedger()
	l.Stepped(t0, engine.Output{Changed: []string{"a"}, Released: []engine.Release{{Group: "a", After: 3 * time.Second}}},
		func(string) (engine.Status, bool) {
			return engine.Status{Queue: "qa", HeldBeforeReady: map[corev1.ResourceName]float64{gpu: 12}}, true
		})
	if !l.Changed() {
		t.Fatal("the ledger counted and says it did not change")
	}
	data, err := l.Encode()
	if err != nil || l.Changed() {
		t.Fatalf("Encode: %v; changed %v after it", err, l.Changed())
	}
	again := NewLedger()
	if err := again.Restore(data, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	want, _ := l.Costs(context.Background(), t0.Add(time.Hour), 24*time.Hour)
	got, _ := again.Costs(context.Background(), t0.Add(time.Hour), 24*time.Hour)
	if d := cmp.Diff(want, got); d != "" || len(got) != 1 {
		t.Errorf("restored ledger (-want +got):\n%s", d)
	}
	minute := t0.Unix() / 60
	for _, bad := range []string{
		`{"buckets": [{"minute": 1, "queue": "q"}]}`,
		fmt.Sprintf(`{"buckets": [{"minute": %d, "queue": "q", "held": {"nvidia.com/gpu": -5}}]}`, minute),
		fmt.Sprintf(`{"buckets": [{"minute": %d, "queue": "q", "cleanups": -1}]}`, minute),
		`{"buckets": 7}`,
	} {
		fresh := NewLedger()
		if err := fresh.Restore([]byte(bad), t0); err == nil {
			t.Errorf("Restore(%s) accepted", bad)
		} else if got, _ := fresh.Costs(context.Background(), t0, 24*time.Hour); len(got) != 0 {
			t.Errorf("Restore(%s) failed (%v) and still added %+v", bad, err, got)
		}
	}
}
