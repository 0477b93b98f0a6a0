package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
)

// ScenarioSoak is 1,000 nodes × 8 GPUs and gangs created and deleted for
// Options.SoakDuration, muster's memory sampled (see SoakResult). It runs only when
// named: it is not part of the default scenarios.
const ScenarioSoak = "soak"

// Defaults of the soak's options.
const (
	defaultSoakDuration = 10 * time.Minute
	defaultSoakSample   = 10 * time.Second
	defaultSoakNodes    = 1000
	defaultSoakLive     = 32
	// soakGPUsPerNode is the GPUs of each soak node.
	soakGPUsPerNode = 8
	// soakGangTimeout bounds the wait for one gang's pods to be Ready; a gang that
	// does not get there is deleted anyway and counted as stalled.
	soakGangTimeout = 2 * time.Minute
	// soakQuiet bounds the wait, after the churn, for muster to forget the deleted
	// groups (muster_tracked_groups back to 0) before the last sample.
	soakQuiet = time.Minute
	// soakNamespace holds every soak object.
	soakNamespace = "soak"
)

// soakSizes are the gang sizes, taken in turn: one-GPU pods, minMember = size.
var soakSizes = []int{8, 4, 16, 8}

// SoakSample is one reading of muster's memory during a soak.
type SoakSample struct {
	// At is from the start of the churn.
	At time.Duration
	// RSS is muster's resident set size, Heap its go_memstats_heap_inuse_bytes.
	RSS, Heap uint64
	// Tracked is muster_tracked_groups: the groups muster keeps per-group state for.
	// Goroutines is muster's go_goroutines.
	Tracked, Goroutines float64
	// Created and Deleted count the gangs created and deleted so far.
	Created, Deleted int64
}

// SoakResult is what a soak measured.
type SoakResult struct {
	// Nodes and GPUsPerNode are the cluster; Live the gangs kept in flight.
	Nodes, GPUsPerNode, Live int
	// Duration is how long gangs were created; WarmUp the part of it left out of
	// the slopes.
	Duration, WarmUp time.Duration
	// Created and Deleted count gangs (group objects and pods); Stalled those not
	// Ready within soakGangTimeout (deleted anyway); PodsBound the pods seen bound.
	Created, Deleted, Stalled, PodsBound int64
	// Samples are taken every Options.SoakSample during the churn; After once the
	// churn has stopped and every gang is deleted, when muster has forgotten them
	// (or soakQuiet has passed).
	Samples []SoakSample
	After   *SoakSample
	// Err says why the soak did not complete, if it did not.
	Err error
}

// soakPlan is the soak's settings, with the defaults filled in.
type soakPlan struct {
	duration, sample time.Duration
	nodes, live      int
}

// soakPlanOf returns the soak's settings from opts.
func soakPlanOf(opts Options) (soakPlan, error) {
	p := soakPlan{duration: opts.SoakDuration, sample: opts.SoakSample, nodes: opts.SoakNodes, live: opts.SoakLive}
	for _, f := range []struct {
		name string
		bad  bool
		val  any
	}{
		{"SoakDuration", p.duration < 0, p.duration}, {"SoakSample", p.sample < 0, p.sample},
		{"SoakNodes", p.nodes < 0, p.nodes}, {"SoakLive", p.live < 0, p.live},
	} {
		if f.bad {
			return soakPlan{}, fmt.Errorf("%s: expected a positive value or zero for the default, found %v", f.name, f.val)
		}
	}
	if p.duration == 0 {
		p.duration = defaultSoakDuration
	}
	if p.sample == 0 {
		p.sample = defaultSoakSample
	}
	if p.nodes == 0 {
		p.nodes = defaultSoakNodes
	}
	if p.live == 0 {
		p.live = defaultSoakLive
	}
	if room := p.nodes * soakGPUsPerNode; p.live*maxSoakSize() > room {
		return soakPlan{}, fmt.Errorf("SoakLive: expected at most %d gangs in flight on %d GPUs, found %d", room/maxSoakSize(), room, p.live)
	}
	return p, nil
}

// maxSoakSize is the largest soak gang.
func maxSoakSize() int {
	m := 0
	for _, s := range soakSizes {
		m = max(m, s)
	}
	return m
}

// WarmUpOf is the part of a soak of duration d left out of the slopes: its first
// fifth.
func WarmUpOf(d time.Duration) time.Duration { return d / 5 }

// runSoak starts a sandbox of p.nodes nodes and `muster serve` as deployed, churns
// gangs for p.duration and samples muster's memory.
func runSoak(ctx context.Context, p soakPlan, opts Options) (res *SoakResult, err error) {
	res = &SoakResult{Nodes: p.nodes, GPUsPerNode: soakGPUsPerNode, Live: p.live, Duration: p.duration, WarmUp: WarmUpOf(p.duration)}
	cl := sandbox.Cluster{Pools: []sandbox.NodePool{{
		Name: "gpu", Count: p.nodes, CPU: "64", Memory: "512Gi", GPUs: soakGPUsPerNode, GPUProduct: "NVIDIA-A100-SXM4-80GB",
	}}}
	sb, err := sandbox.Start(ctx, sandbox.Options{Cluster: cl, Kubelet: kubelet.Config{Timing: kubelet.DefaultTiming()}, Log: opts.Log})
	if err != nil {
		return res, fmt.Errorf("starting the sandbox: %w", err)
	}
	defer func() { err = errors.Join(err, sb.Stop()) }()
	dir, err := os.MkdirTemp("", "muster-soak")
	if err != nil {
		return res, fmt.Errorf("creating a temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	config, client, err := soakClient(ctx, sb, opts)
	if err != nil {
		return res, err
	}
	tr, err := trackReady(ctx, client, soakNamespace)
	if err != nil {
		return res, err
	}
	defer tr.stop()
	runCtx, stopMuster := context.WithCancel(ctx)
	defer stopMuster()
	env := runEnv{config: config, musterBinary: opts.MusterBinary, dir: dir, log: opts.Log}
	m, metricsAddr, err := startMusterProcess(runCtx, env, nil)
	if err != nil {
		return res, err
	}
	defer func() {
		stopMuster()
		if serr := m.Stop(musterStopTimeout); serr != nil {
			err = errors.Join(err, fmt.Errorf("muster serve: %w", serr))
		}
	}()
	probe := probePod(soakNamespace, musterv1alpha1.DefaultConfiguration().SchedulerName)
	if err := bindProbe(ctx, client, probe); err != nil {
		return res, err
	}
	// The probe is a group of one to muster: deleted, it leaves muster_tracked_groups
	// to the gangs.
	now := int64(0)
	if err := client.CoreV1().Pods(soakNamespace).Delete(ctx, probe.Name, metav1.DeleteOptions{GracePeriodSeconds: &now}); err != nil {
		return res, fmt.Errorf("deleting the probe pod %s: %w", podKey(probe), err)
	}
	c := &churn{client: client, tracker: tr, schedulerName: musterv1alpha1.DefaultConfiguration().SchedulerName}
	s := sampler{m: m, addr: metricsAddr, churn: c}
	res.Err = c.run(ctx, p, &s, opts.Progress)
	res.Samples = s.samples
	res.Created, res.Deleted, res.Stalled, res.PodsBound = c.created.Load(), c.deleted.Load(), c.stalled.Load(), tr.boundCount()
	if res.Err == nil {
		after, aerr := s.afterChurn(ctx)
		res.After, res.Err = after, aerr
	}
	return res, nil
}

// soakClient returns the soak's client settings (the bench's QPS and burst,
// protobuf) and a client, and creates namespace soakNamespace.
func soakClient(ctx context.Context, sb *sandbox.Sandbox, opts Options) (*rest.Config, kubernetes.Interface, error) {
	config := sb.RESTConfig()
	config.QPS, config.Burst = opts.QPS, opts.Burst
	config.ContentType = kruntime.ContentTypeProtobuf
	config.AcceptContentTypes = kruntime.ContentTypeProtobuf + "," + kruntime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the soak's client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: soakNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, nil, fmt.Errorf("creating namespace %s: %w", soakNamespace, err)
	}
	return config, client, nil
}

// sampler reads muster's memory and group count.
type sampler struct {
	m       *sandbox.Muster
	addr    string
	churn   *churn
	from    time.Time
	samples []SoakSample
}

// take reads one sample.
func (s *sampler) take(ctx context.Context) (SoakSample, error) {
	smp := SoakSample{At: time.Since(s.from), Created: s.churn.created.Load(), Deleted: s.churn.deleted.Load()}
	rss, err := s.m.RSS()
	if err != nil {
		return smp, fmt.Errorf("reading muster's RSS: %w", err)
	}
	smp.RSS = rss
	for _, metric := range []struct {
		name string
		set  func(float64)
	}{
		{"go_memstats_heap_inuse_bytes", func(v float64) { smp.Heap = uint64(v) }},
		{"muster_tracked_groups", func(v float64) { smp.Tracked = v }},
		{"go_goroutines", func(v float64) { smp.Goroutines = v }},
	} {
		v, ok, err := sandbox.ScrapeMetric(ctx, s.addr, metric.name)
		if err != nil {
			return smp, err
		}
		if !ok {
			return smp, fmt.Errorf("scraping muster's %s at %s: expected a sample, found none", metric.name, s.addr)
		}
		metric.set(v)
	}
	return smp, nil
}

// afterChurn waits, once every gang is deleted, until muster tracks no group (or
// soakQuiet passes), and takes the last sample.
func (s *sampler) afterChurn(ctx context.Context) (*SoakSample, error) {
	deadline := time.Now().Add(soakQuiet)
	for {
		smp, err := s.take(ctx)
		if err != nil {
			return nil, err
		}
		if smp.Tracked == 0 || time.Now().After(deadline) {
			return &smp, nil
		}
		select {
		case <-ctx.Done():
			return &smp, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// churn creates and deletes gangs in namespace soakNamespace.
type churn struct {
	client                    kubernetes.Interface
	tracker                   *readyTracker
	schedulerName             string
	next                      atomic.Int64
	created, deleted, stalled atomic.Int64
}

// run keeps p.live gangs in flight for p.duration, each created, waited for until
// Ready and deleted, then replaced by a new one of a new name; it samples muster
// every p.sample. It returns when every gang is deleted.
func (c *churn) run(ctx context.Context, p soakPlan, s *sampler, progress io.Writer) error {
	churnCtx, cancel := context.WithTimeout(ctx, p.duration)
	defer cancel()
	s.from = time.Now()
	var wg sync.WaitGroup
	errs := make([]error, p.live+1)
	for i := range p.live {
		wg.Go(func() { errs[i] = c.slot(ctx, churnCtx) })
	}
	wg.Go(func() {
		tick := time.NewTicker(p.sample)
		defer tick.Stop()
		for {
			smp, err := s.take(ctx)
			if err != nil {
				errs[p.live] = err
				cancel()
				return
			}
			s.samples = append(s.samples, smp)
			fmt.Fprintf(progress, "soak %s: RSS %.1f MiB, heap %.1f MiB, %v goroutines, %v groups tracked, %d created, %d deleted\n",
				smp.At.Round(time.Second), mib(smp.RSS), mib(smp.Heap), smp.Goroutines, smp.Tracked, smp.Created, smp.Deleted)
			select {
			case <-churnCtx.Done():
				return
			case <-s.m.Done():
				errs[p.live] = fmt.Errorf("muster serve exited during the soak: %w", s.m.Err())
				cancel()
				return
			case <-tick.C:
			}
		}
	})
	wg.Wait()
	return errors.Join(errors.Join(errs...), ctx.Err())
}

// slot creates a gang, waits until it is Ready (or soakGangTimeout), deletes it, and
// starts over until churnCtx ends. Deletes use ctx, so that the last gang is deleted
// after the churn's end.
func (c *churn) slot(ctx, churnCtx context.Context) error {
	for churnCtx.Err() == nil {
		j := int(c.next.Add(1) - 1)
		size := soakSizes[j%len(soakSizes)]
		native := j%2 == 0
		name := jobName(j)
		ready := c.tracker.expect(name, size)
		err := c.create(ctx, name, j, size, native)
		if err == nil {
			c.created.Add(1)
			waitCtx, cancel := context.WithTimeout(churnCtx, soakGangTimeout)
			select {
			case <-ready:
			case <-waitCtx.Done():
				if churnCtx.Err() == nil {
					c.stalled.Add(1)
				}
			}
			cancel()
		}
		c.tracker.forget(name)
		if derr := c.delete(ctx, name, native); derr != nil || err != nil {
			return errors.Join(err, derr)
		}
		c.deleted.Add(1)
	}
	return nil
}

// create creates gang name: a native PodGroup and its pods, or pods that declare the
// gang by label (muster.dev/group, muster.dev/min-member).
func (c *churn) create(ctx context.Context, name string, j, size int, native bool) error {
	ns := soakNamespace
	if native {
		g := &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(size)},
			}},
		}
		if _, err := c.client.SchedulingV1beta1().PodGroups(ns).Create(ctx, g, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating PodGroup %s/%s: %w", ns, name, err)
		}
	}
	for i := range size {
		pod := Scenario{}.pod(ns, j, i, podSpec{schedulerName: c.schedulerName, gang: native})
		if !native {
			pod.Labels[musterv1alpha1.GroupLabel] = name
			pod.Annotations = map[string]string{musterv1alpha1.MinMemberAnnotation: strconv.Itoa(size)}
		}
		if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", podKey(pod), err)
		}
	}
	return nil
}

// delete deletes gang name's pods, at once, and its PodGroup if native.
func (c *churn) delete(ctx context.Context, name string, native bool) error {
	ns := soakNamespace
	now := int64(0)
	if err := c.client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &now},
		metav1.ListOptions{LabelSelector: LabelJob + "=" + name}); err != nil {
		return fmt.Errorf("deleting the pods of gang %s/%s: %w", ns, name, err)
	}
	if native {
		if err := c.client.SchedulingV1beta1().PodGroups(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting PodGroup %s/%s: %w", ns, name, err)
		}
	}
	return nil
}

// mib is bytes in MiB.
func mib(b uint64) float64 { return float64(b) / (1 << 20) }
