package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/muster-sched/muster/internal/sandbox"
)

// ScenarioDeepQueue is a cluster filled by holder pods, a deep queue of single-pod
// groups and gangs behind them, and capacity freed by the bench node by node (see
// DeepQueue). It runs only when named.
const ScenarioDeepQueue = "deep-queue"

// LabelHolder marks the deep-queue scenario's holder pods, with the node each holds.
// Holders are bound by the bench itself (spec.nodeName set at create), for every
// runner alike, and are not part of any job.
const LabelHolder = "bench.muster.dev/holder"

// Defaults of the deep-queue scenario: issue 21's sizes.
const (
	DefaultDeepNodes  = 1000
	DefaultDeepGroups = 10000
	DefaultDeepGangs  = 500
	// deepGPUs is the GPUs of each node, all taken by its holder.
	deepGPUs = 8
	// deepGangSize is the pods (and minCount) of each gang.
	deepGangSize = 8
	// deepReleaseBatch holders are deleted every deepReleaseEvery, in node order.
	deepReleaseBatch = 10
	deepReleaseEvery = time.Second
	// deepSettle is the pause between the last queued create and the first release,
	// so that the scheduler has seen its queue before capacity comes.
	deepSettle = 10 * time.Second
	// deepQuiet ends a run whose holders are all released once no pod has been bound
	// for this long.
	deepQuiet = 30 * time.Second
)

// DeepQueue shapes the deep-queue scenario. Nodes of 8 GPUs are each filled by one
// holder pod of 8 GPUs before the scheduler starts; Groups single-pod groups (one
// GPU, a PodGroup of minCount 1 for gang runners) and Gangs gangs of 8 one-GPU pods
// are created and stay queued; after deepSettle the bench deletes deepReleaseBatch
// holders every deepReleaseEvery, in node order, on a fixed schedule from the first
// release, so that every runner sees the same sequence of releases. The run ends
// when every queued pod is bound, when every holder is released and the freed GPUs
// are all bound, or when every holder is released and no pod was bound for
// deepQuiet.
type DeepQueue struct {
	Nodes, Groups, Gangs int
}

// deepScenario returns the deep-queue scenario of the given sizes.
func deepScenario(d DeepQueue) Scenario {
	return Scenario{
		Name: ScenarioDeepQueue, JobSize: deepGangSize, Deep: &d,
		Cluster: sandbox.Cluster{Pools: []sandbox.NodePool{{
			Name: "gpu", Count: d.Nodes, CPU: "64", Memory: "512Gi", GPUs: deepGPUs, GPUProduct: "NVIDIA-A100-SXM4-80GB",
		}}},
	}
}

// validate refuses sizes the scenario cannot run.
func (d DeepQueue) validate() error {
	switch {
	case d.Nodes < 1:
		return fmt.Errorf("deep-queue nodes: expected at least 1, found %d", d.Nodes)
	case d.Groups < 0 || d.Gangs < 0:
		return fmt.Errorf("deep-queue groups and gangs: expected 0 or more, found %d and %d", d.Groups, d.Gangs)
	case d.Groups+d.Gangs == 0:
		return errors.New("deep-queue groups and gangs: expected at least one group, found 0 and 0")
	}
	return nil
}

// pods is the queued pods of the scenario.
func (d DeepQueue) pods() int { return d.Groups + d.Gangs*deepGangSize }

// groupOrder returns the queued groups in creation order with their sizes: the
// gangs spread evenly among the single-pod groups, so that each runner's queue
// holds both kinds at every depth.
func (d DeepQueue) groupOrder() (names []string, sizes map[string]int) {
	sizes = map[string]int{}
	add := func(name string, size int) {
		names = append(names, name)
		sizes[name] = size
	}
	gang := 0
	for i := range d.Groups {
		// Gang g goes before single-pod group g*Groups/Gangs.
		for gang < d.Gangs && gang*d.Groups <= i*d.Gangs {
			add("gang-"+strconv.Itoa(gang), deepGangSize)
			gang++
		}
		add("one-"+strconv.Itoa(i), 1)
	}
	for ; gang < d.Gangs; gang++ {
		add("gang-"+strconv.Itoa(gang), deepGangSize)
	}
	return names, sizes
}

// buildDeep returns the queued groups and pods, shaped as spec says.
func (s Scenario) buildDeep(ns string, spec podSpec) workload {
	names, sizes := s.Deep.groupOrder()
	var w workload
	for _, job := range names {
		if spec.gang {
			w.groups = append(w.groups, &schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job},
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(sizes[job])},
				}},
			})
		}
		for i := range sizes[job] {
			w.pods = append(w.pods, s.podOf(ns, job, i, spec))
		}
	}
	return w
}

// holderPod is the pod that takes every GPU of node, bound there by the bench.
func holderPod(ns, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder-" + node, Labels: map[string]string{LabelHolder: node}},
		Spec: corev1.PodSpec{
			NodeName:      node,
			SchedulerName: ceilingSchedulerName,
			Containers: []corev1.Container{{
				Name: "holder", Image: "busybox:1.37",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
						sandbox.ResourceGPU: *resource.NewQuantity(deepGPUs, resource.DecimalSI),
					},
					Limits: corev1.ResourceList{sandbox.ResourceGPU: *resource.NewQuantity(deepGPUs, resource.DecimalSI)},
				},
			}},
		},
	}
}

// createHolders binds a holder on each node, by parallel workers.
func createHolders(ctx context.Context, client kubernetes.Interface, ns string, nodes []string) error {
	pods := make([]*corev1.Pod, len(nodes))
	for i, n := range nodes {
		pods[i] = holderPod(ns, n)
	}
	if err := createPods(ctx, client, pods, false); err != nil {
		return fmt.Errorf("binding the deep-queue holders: %w", err)
	}
	return nil
}

// releaseAndWait frees the holders' nodes on the scenario's schedule and waits for
// its end (see DeepQueue), at most timeout from the call.
func releaseAndWait(ctx context.Context, client kubernetes.Interface, sc Scenario, env runEnv, obs *observer, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := sleepCtx(ctx, deepSettle); err != nil {
		return fmt.Errorf("deep-queue: waiting before the first release: %w", err)
	}
	total := sc.Deep.pods()
	start := time.Now()
	for step := 0; step*deepReleaseBatch < len(env.nodes); step++ {
		if err := sleepCtx(ctx, time.Until(start.Add(time.Duration(step)*deepReleaseEvery))); err != nil {
			return fmt.Errorf("deep-queue: at release %d: %w", step, err)
		}
		if obs.boundCount() >= total {
			return nil
		}
		batch := env.nodes[step*deepReleaseBatch : min(len(env.nodes), (step+1)*deepReleaseBatch)]
		if err := deleteHolders(ctx, client, env.probe.Namespace, batch); err != nil {
			return err
		}
	}
	return obs.waitQuiet(ctx, min(total, len(env.nodes)*deepGPUs), deepQuiet)
}

// deleteHolders deletes the holders of nodes at once, without grace: the API server
// removes them at once, as a pod that ended would leave.
func deleteHolders(ctx context.Context, client kubernetes.Interface, ns string, nodes []string) error {
	zero := int64(0)
	errs := make([]error, len(nodes))
	workqueue.ParallelizeUntil(ctx, len(nodes), len(nodes), func(i int) {
		name := holderPod(ns, nodes[i]).Name
		if err := client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			errs[i] = fmt.Errorf("deep-queue: releasing node %s (deleting %s/%s): %w", nodes[i], ns, name, err)
		}
	})
	return errors.Join(errors.Join(errs...), ctx.Err())
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// DeepFigures are the deep-queue scenario's figures of one run.
type DeepFigures struct {
	// Groups is the queued groups, Admitted how many had all their pods bound.
	Groups, Admitted int
	// Releases is the holders seen deleted; Used is how many of them were followed
	// by the admission of a group with a pod on the freed node.
	Releases, Used int
	// Drain is from the first release to the last admission; AdmissionsPerSecond is
	// Admitted over Drain.
	Drain               time.Duration
	AdmissionsPerSecond float64
	// ReleaseP50 and ReleaseP99 are percentiles (nearest rank), over the used
	// releases, of the time from a holder's deletion, as the bench's watch saw it,
	// to the first admission of a group with a pod bound on its node after it.
	ReleaseP50, ReleaseP99 time.Duration
	// Filled is how many released nodes had all their GPUs bound again; FillP50 and
	// FillP99 are percentiles, over them, of the time from the holder's deletion to
	// the bind that took the node's last GPU: how long freed capacity stayed idle.
	Filled           int
	FillP50, FillP99 time.Duration
}

// deepFigures computes the figures from a timeline: sizes is each queued group's
// minimum (all its pods), released when each node's holder was seen deleted.
func (t timeline) deepFigures(sizes map[string]int) DeepFigures {
	f := DeepFigures{Groups: len(sizes), Releases: len(t.released)}
	perJob := map[string][]time.Time{}
	for pod, at := range t.bound {
		perJob[t.job[pod]] = append(perJob[t.job[pod]], at)
	}
	whole := map[string]time.Time{}
	var last time.Time
	for job, ts := range perJob {
		size, ok := sizes[job]
		if !ok || len(ts) < size {
			continue
		}
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		whole[job] = ts[size-1]
		if ts[size-1].After(last) {
			last = ts[size-1]
		}
	}
	f.Admitted = len(whole)
	var first time.Time
	for _, at := range t.released {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if !first.IsZero() && last.After(first) {
		f.Drain = last.Sub(first)
		f.AdmissionsPerSecond = float64(f.Admitted) / f.Drain.Seconds()
	}
	f.Filled, f.FillP50, f.FillP99 = t.fillTimes()
	next := map[string]time.Time{} // node → first admission using it after its release
	for pod, node := range t.node {
		rel, ok := t.released[node]
		at, admitted := whole[t.job[pod]]
		if !ok || !admitted || t.bound[pod].Before(rel) {
			continue
		}
		if cur, seen := next[node]; !seen || at.Before(cur) {
			next[node] = at
		}
	}
	var lat []time.Duration
	for node, at := range next {
		lat = append(lat, at.Sub(t.released[node]))
	}
	f.Used = len(lat)
	f.ReleaseP50, f.ReleaseP99 = nearestRank(lat, 0.50), nearestRank(lat, 0.99)
	return f
}

// fillTimes returns how many released nodes had deepGPUs one-GPU pods bound after
// their release, and the p50 and p99 of the time from the release to the last of
// those binds.
func (t timeline) fillTimes() (int, time.Duration, time.Duration) {
	after := map[string][]time.Time{} // node → binds after its release
	for pod, node := range t.node {
		if rel, ok := t.released[node]; ok && !t.bound[pod].Before(rel) {
			after[node] = append(after[node], t.bound[pod])
		}
	}
	var fill []time.Duration
	for node, ts := range after {
		if len(ts) < deepGPUs {
			continue
		}
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		fill = append(fill, ts[deepGPUs-1].Sub(t.released[node]))
	}
	return len(fill), nearestRank(fill, 0.50), nearestRank(fill, 0.99)
}

// nearestRank returns the p-th percentile of ds by nearest rank, 0 if ds is empty.
func nearestRank(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
