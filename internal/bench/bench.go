// Package bench runs muster side by side with the upstream kube-scheduler of the
// same Kubernetes version (v1.37) on the sandbox, in one run: the same nodes and the
// same pods, scheduled by one scheduler at a time. muster runs as it is deployed, a
// `muster serve` process (Options.MusterBinary) with deploy/'s Configuration, as
// deploy/'s ServiceAccount, over the network to the sandbox; kube-scheduler runs in
// the bench's process, as its own command would.
//
// Each run of a scenario (a cluster and a workload, see Scenario) gets a sandbox of
// its own, started for it: one runner, its copy of the workload (identical pods;
// only schedulerName and, for gang runners, spec.schedulingGroup and the PodGroups
// differ), and the whole cluster, on a control plane that served no earlier run.
// The runners are
// kube-scheduler with its default profile on plain pods, at its default client
// settings and with QPS raised; kube-scheduler with GenericWorkload gang scheduling
// on native PodGroups; muster with the shipped Configuration on the same PodGroups;
// and a ceiling that binds to precomputed nodes and so measures the API server.
// Runners "with QPS raised" use Options.QPS and Burst, and speak protobuf
// (kube-scheduler's default content type). With several rounds, each
// round runs every runner once, starting one runner later than the round before, and
// the table shows medians; before each run the process collects its garbage and
// pauses for settleTime.
//
// Beside the figures, each run records the write requests the API server served
// (apiserver_request_total), from every client: where the API server's time went.
//
// Measurements come from a watch on the run's pods: a pod's bind time is when it is
// first seen with spec.nodeName, its Ready time when it is first seen Ready.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
)

// Options configures a bench run.
type Options struct {
	// Scenarios are the names (see Scenarios) to run; empty means all but the soak
	// (DefaultScenarios). "ceiling" adds the ceiling runner to throughput and
	// big-gang; "soak" runs the soak (see SoakResult) after the others.
	Scenarios []string
	// Runners restricts the runners (see Runners); empty means every runner the
	// scenarios call for. The ceiling never runs in seed.
	Runners []string
	// QPS and Burst are the client settings of every scheduler; zero means 5,000 and
	// 10,000.
	QPS   float32
	Burst int
	// Rounds is how many times each scenario runs its runners, one after the other in
	// each round; the table shows each figure's median over the rounds. Zero means 1.
	Rounds int
	// Window, if set, replaces the seed scenario's 60 s observation window.
	Window time.Duration
	// Timeout bounds each run's wait for all its pods to be bound; zero means 15 min.
	Timeout time.Duration
	// Drain is how long a run with no window goes on after its last bind before the
	// scheduler is stopped, so that the API writes a scheduler defers past its binds
	// (group statuses, events) and the kubelet's last status writes are counted; zero
	// means 10 s. The timed figures end at the last bind.
	Drain time.Duration
	// Log receives the control plane's and the schedulers' logs; nil discards them.
	Log io.Writer
	// Progress receives one line per run as it ends; nil discards them.
	Progress io.Writer
	// MusterBinary is the muster executable the muster runners run as `muster
	// serve`; `muster bench` passes itself.
	MusterBinary string
	// ProfileDir, if set, receives a CPU profile of each run, from the first pod
	// create to the last bind (or the window's end), named
	// <scenario>-<runner>-<round>.pprof. Samples of the runner's goroutines carry
	// the label runner=<name>. The muster runners' `muster serve`, a process of its
	// own, is profiled through its pprofAddr over its whole run, in consecutive
	// profiles <scenario>-<runner>-<round>-serve-<k>.pprof (`go tool pprof` merges
	// the files it is given).
	ProfileDir string
	// SoakDuration is how long the soak creates and deletes gangs; zero means 10 min.
	// SoakSample is how often it samples muster's memory; zero means 10 s.
	SoakDuration, SoakSample time.Duration
	// SoakNodes is the soak's 8-GPU nodes, zero meaning 1,000; SoakLive the gangs it
	// keeps in flight, zero meaning 32.
	SoakNodes, SoakLive int
	// DeepNodes, DeepGroups and DeepGangs size the deep-queue scenario (see
	// DeepQueue); zero means 1,000 nodes, 10,000 single-pod groups and 500 gangs.
	// DeepGroups or DeepGangs below zero means none of that kind.
	DeepNodes, DeepGroups, DeepGangs int
	// DRANodes and DRAGangs size the DRA scenario: nodes of 8 DRA GPUs, and gangs of 8
	// one-device claims; zero means 1,000 and 500.
	DRANodes, DRAGangs int
}

// Defaults of Options.
const (
	defaultQPS     = 5000
	defaultBurst   = 10000
	defaultTimeout = 15 * time.Minute
	defaultDrain   = 10 * time.Second
	// createWorkers is how many pods are created in parallel, except in interleaved
	// scenarios, whose order matters.
	createWorkers = 16
	// probeTimeout bounds the wait for a scheduler to bind its probe pod.
	probeTimeout = 2 * time.Minute
	// settleTime is the pause before each run (see settle).
	settleTime = 2 * time.Second
)

// plan is the scenarios and, for each, the runners to run, and the soak if it runs.
type plan struct {
	scenarios []Scenario
	runners   map[string][]string
	soak      *soakPlan
}

// makePlan validates opts and returns what to run.
func makePlan(opts Options) (plan, error) {
	names := opts.Scenarios
	if len(names) == 0 {
		names = DefaultScenarios()
	}
	withCeiling := slices.Contains(names, ScenarioCeiling)
	var p plan
	p.runners = map[string][]string{}
	if slices.Contains(names, ScenarioSoak) {
		sp, err := soakPlanOf(opts)
		if err != nil {
			return plan{}, fmt.Errorf("soak: %w", err)
		}
		p.soak = &sp
	}
	for _, name := range Scenarios() {
		if name == ScenarioCeiling || name == ScenarioSoak || !slices.Contains(names, name) {
			continue
		}
		sc, err := scenarioByName(name)
		if err != nil {
			return plan{}, err
		}
		if name == ScenarioDeepQueue {
			if sc, err = deepOf(opts); err != nil {
				return plan{}, err
			}
		}
		if name == ScenarioDRA {
			if sc, err = draOf(opts); err != nil {
				return plan{}, err
			}
		}
		for _, r := range Runners() {
			if r == RunnerCeiling && (!withCeiling || name == ScenarioSeed || name == ScenarioDeepQueue || name == ScenarioDRA) {
				continue
			}
			if len(opts.Runners) == 0 || slices.Contains(opts.Runners, r) {
				p.runners[name] = append(p.runners[name], r)
			}
		}
		if len(p.runners[name]) == 0 {
			hint := ""
			if slices.Contains(opts.Runners, RunnerCeiling) && !withCeiling && name != ScenarioSeed {
				hint = " (the ceiling runner runs only with the ceiling scenario)"
			}
			return plan{}, fmt.Errorf("runners: expected one that runs scenario %s, found %v%s", name, opts.Runners, hint)
		}
		p.scenarios = append(p.scenarios, sc)
	}
	for _, name := range names {
		if !slices.Contains(Scenarios(), name) {
			return plan{}, fmt.Errorf("scenarios: expected some of %v, found %q", Scenarios(), name)
		}
	}
	for _, name := range opts.Runners {
		if !slices.Contains(Runners(), name) {
			return plan{}, fmt.Errorf("runners: expected some of %v, found %q", Runners(), name)
		}
	}
	if len(p.scenarios) == 0 && p.soak == nil {
		return plan{}, fmt.Errorf("scenarios: expected at least one of seed, throughput, big-gang, soak, found %v", names)
	}
	return p, nil
}

// Run runs the scenarios and returns their results. A run that does not complete
// (a scheduler stops, or pods are left unbound at the timeout) is recorded in its
// Result and the bench goes on; failing to set a scenario up is an error.
func Run(ctx context.Context, opts Options) (*Report, error) {
	p, err := makePlan(opts)
	if err != nil {
		return nil, err
	}
	if opts.QPS == 0 {
		opts.QPS, opts.Burst = defaultQPS, defaultBurst
	}
	if opts.Timeout == 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.Drain == 0 {
		opts.Drain = defaultDrain
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Rounds < 1 {
		opts.Rounds = 1
	}
	rep := &Report{QPS: opts.QPS, Burst: opts.Burst, Rounds: opts.Rounds}
	for _, sc := range p.scenarios {
		if sc.Name == ScenarioSeed && opts.Window > 0 {
			sc.Window = opts.Window
		}
		results, err := runScenario(ctx, sc, p.runners[sc.Name], opts)
		rep.Results = append(rep.Results, results...)
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	if p.soak != nil {
		soak, err := runSoak(ctx, *p.soak, opts)
		rep.Soak = soak
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", ScenarioSoak, err)
		}
	}
	return rep, nil
}

// runScenario runs each runner on the scenario, round after round. Every run gets a
// sandbox of its own, started for it with the scenario's cluster and stopped after
// it: the API server keeps the history of every object it served (its watch cache
// grew by ~200 MiB per throughput run when runs shared one), and a run on a
// control plane that earlier runs had filled was up to 20% slower, whichever
// scheduler it measured.
func runScenario(ctx context.Context, sc Scenario, runners []string, opts Options) ([]Result, error) {
	var results []Result
	for round := 1; round <= opts.Rounds; round++ {
		// Each round starts with the next runner, so that no runner always follows the
		// same one: a run can leave work behind (garbage, a warm cache) for the next.
		k := (round - 1) % len(runners)
		for _, name := range slices.Concat(runners[k:], runners[:k]) {
			res, err := runFresh(ctx, sc, name, round, opts)
			if err != nil {
				return results, fmt.Errorf("runner %s, round %d: %w", name, round, err)
			}
			fmt.Fprintln(opts.Progress, res.summary())
			results = append(results, res)
		}
	}
	return results, nil
}

// runFresh starts a sandbox with the scenario's cluster, runs one runner on it and
// stops it.
func runFresh(ctx context.Context, sc Scenario, name string, round int, opts Options) (_ Result, err error) {
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Cluster: sc.Cluster, Kubelet: kubelet.Config{Timing: kubelet.DefaultTiming()}, Log: opts.Log,
	})
	if err != nil {
		return Result{}, fmt.Errorf("starting the sandbox: %w", err)
	}
	defer func() { err = errors.Join(err, sb.Stop()) }()
	dir, err := os.MkdirTemp("", "muster-bench")
	if err != nil {
		return Result{}, fmt.Errorf("creating a temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := sb.WriteKubeconfig(kubeconfig); err != nil {
		return Result{}, err
	}
	client, err := kubernetes.NewForConfig(sb.RESTConfig())
	if err != nil {
		return Result{}, fmt.Errorf("creating the bench's client: %w", err)
	}
	nodes, err := sc.Cluster.Nodes()
	if err != nil {
		return Result{}, err
	}
	env := runEnv{
		config: sb.RESTConfig(), kubeconfig: kubeconfig, musterBinary: opts.MusterBinary, dir: dir,
		gpusPerNode: sc.Cluster.Pools[0].GPUs, log: opts.Log,
	}
	env.config.QPS, env.config.Burst = opts.QPS, opts.Burst
	env.config.ContentType = kruntime.ContentTypeProtobuf
	env.config.AcceptContentTypes = kruntime.ContentTypeProtobuf + "," + kruntime.ContentTypeJSON
	for _, n := range nodes {
		env.nodes = append(env.nodes, n.Name)
	}
	if err := settle(ctx); err != nil {
		return Result{}, err
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	goroutines := runtime.NumGoroutine()
	res, err := runOne(ctx, client, sc, name, round, env, opts)
	res.HeapBefore, res.GoroutinesBefore = mem.HeapAlloc, goroutines
	return res, err
}

// settle collects the garbage of the previous run and waits settleTime, so that each
// run starts on a quiet process: the control plane, the kubelet and the schedulers
// share one heap.
func settle(ctx context.Context) error {
	runtime.GC()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settleTime):
		return nil
	}
}

// runOne runs one runner on the scenario, in the given round: it creates the workload
// in a namespace of its own, starts the scheduler, waits for its probe, creates the
// pods, waits for them (or for the window), and stops the scheduler.
func runOne(ctx context.Context, client kubernetes.Interface, sc Scenario, name string, round int, env runEnv, opts Options) (Result, error) {
	r, err := newRunner(name)
	if err != nil {
		return Result{}, err
	}
	ns := fmt.Sprintf("%s-%s-%d", sc.Name, name, round)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return Result{}, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	env.work, env.probe = sc.build(ns, r.podSpec()), probePod(ns, r.podSpec().schedulerName)
	if opts.ProfileDir != "" {
		env.serveProfile = filepath.Join(opts.ProfileDir, ns+"-serve")
	}
	if err := createGroups(ctx, client, env.work.groups); err != nil {
		return Result{}, err
	}
	if sc.DRA {
		if err := createTemplate(ctx, client, ns); err != nil {
			return Result{}, err
		}
	}
	if sc.Deep != nil {
		if err := createHolders(ctx, client, ns, env.nodes); err != nil {
			return Result{}, err
		}
	}
	obs, err := observe(ctx, client, ns)
	if err != nil {
		return Result{}, err
	}
	defer obs.stop()
	before, err := scrapeRequests(ctx, client)
	if err != nil {
		return Result{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	// The runner's goroutines carry its name, so that a CPU profile of the run
	// (muster bench --cpuprofile-dir) tells the scheduler's time from the control
	// plane's.
	var waitStopped func() error
	pprof.Do(runCtx, pprof.Labels("runner", name), func(runCtx context.Context) {
		waitStopped, err = r.start(runCtx, env)
	})
	if err != nil {
		return Result{}, err
	}
	res := Result{Scenario: sc.Name, Runner: name, Round: round, Pods: sc.Pods(), JobSize: sc.JobSize, Window: sc.Window}
	profile := ""
	if opts.ProfileDir != "" {
		profile = filepath.Join(opts.ProfileDir, ns+".pprof")
	}
	from, created, runErr := drive(ctx, client, sc, env, obs, opts.Timeout, profile)
	// Read before the drain; a failed read is reported once the scheduler is stopped.
	timed, timedErr := scrapeRequests(ctx, client)
	if runErr == nil && sc.Window == 0 {
		select {
		case <-ctx.Done():
		case <-time.After(opts.Drain):
		}
	}
	stop()
	res.measure(sc, from, obs.snapshot())
	if !created.IsZero() {
		res.Created = created.Sub(from)
	}
	res.Err = errors.Join(runErr, waitStopped())
	if sc.DRA {
		n, err := countAllocated(ctx, client, ns)
		res.ClaimsAllocated, res.Err = n, errors.Join(res.Err, err)
		if err == nil && runErr == nil && n != res.Bound {
			res.Err = errors.Join(res.Err, fmt.Errorf("%d pods bound, %d claims allocated and reserved: a pod bound with its claim unallocated never starts", res.Bound, n))
		}
	}
	after, err := scrapeRequests(ctx, client)
	if err := errors.Join(timedErr, err); err != nil {
		return res, err
	}
	res.Writes, res.TimedWrites = after.writesSince(before), timed.writesSince(before)
	return res, nil
}

// startProfile starts a CPU profile written to path and returns the function that
// stops it; with no path it does nothing.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile %s: %w", path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// drive waits for the scheduler to bind the probe, creates the workload's pods, and
// waits for the scenario's end: its window, or every pod bound. From the first create
// to the end it writes a CPU profile to profile, if set. It returns when the first
// pod's create was sent and when the last create returned (zero if not all were
// created), and why the run did not complete, if it did not.
func drive(ctx context.Context, client kubernetes.Interface, sc Scenario, env runEnv, obs *observer, timeout time.Duration, profile string) (from, created time.Time, err error) {
	if err := bindProbe(ctx, client, env.probe); err != nil {
		return time.Time{}, time.Time{}, err
	}
	stopProfile, err := startProfile(profile)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	defer stopProfile()
	from = time.Now()
	if err := createPods(ctx, client, env.work.pods, sc.Interleave); err != nil {
		return from, time.Time{}, err
	}
	created = time.Now()
	if sc.Deep != nil {
		return from, created, releaseAndWait(ctx, client, sc, env, obs, timeout)
	}
	if sc.Window > 0 {
		select {
		case <-ctx.Done():
			return from, created, ctx.Err()
		case <-time.After(time.Until(from.Add(sc.Window))):
			return from, created, nil
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return from, created, obs.waitBound(waitCtx, len(env.work.pods))
}

// probePod is a pod without GPUs or a job that a scheduler must bind before the
// workload is created.
func probePod(ns, schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []corev1.Container{{Name: "probe", Image: "busybox:1.37", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")},
			}}},
		},
	}
}

// bindProbe creates the probe pod and waits until it is bound.
func bindProbe(ctx context.Context, client kubernetes.Interface, probe *corev1.Pod) error {
	if _, err := client.CoreV1().Pods(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the probe pod: %w", err)
	}
	node := ""
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, probeTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(probe.Namespace).Get(ctx, probe.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the scheduler to bind the probe pod %s/%s: expected it bound, found node %q: %w",
			probe.Namespace, probe.Name, node, err)
	}
	return nil
}

// createGroups creates the PodGroups by parallel workers.
func createGroups(ctx context.Context, client kubernetes.Interface, groups []*schedulingv1beta1.PodGroup) error {
	errs := make([]error, len(groups))
	workqueue.ParallelizeUntil(ctx, createWorkers, len(groups), func(i int) {
		g := groups[i]
		if _, err := client.SchedulingV1beta1().PodGroups(g.Namespace).Create(ctx, g, metav1.CreateOptions{}); err != nil {
			errs[i] = fmt.Errorf("creating PodGroup %s/%s: %w", g.Namespace, g.Name, err)
		}
	})
	return errors.Join(errors.Join(errs...), ctx.Err())
}

// deepOf returns the deep-queue scenario of opts' sizes.
func deepOf(opts Options) (Scenario, error) {
	d := DeepQueue{Nodes: opts.DeepNodes, Groups: opts.DeepGroups, Gangs: opts.DeepGangs}
	if d.Nodes == 0 {
		d.Nodes = DefaultDeepNodes
	}
	d.Groups, d.Gangs = sizeOr(d.Groups, DefaultDeepGroups), sizeOr(d.Gangs, DefaultDeepGangs)
	if err := d.validate(); err != nil {
		return Scenario{}, err
	}
	return deepScenario(d), nil
}

// sizeOr returns n, def if n is zero, and zero if n is negative.
func sizeOr(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// createPods creates pods in order: one at a time if interleaved (the order is the
// point), else by parallel workers that take them in order.
func createPods(ctx context.Context, client kubernetes.Interface, pods []*corev1.Pod, interleaved bool) error {
	workers := createWorkers
	if interleaved {
		workers = 1
	}
	errs := make([]error, len(pods))
	workqueue.ParallelizeUntil(ctx, workers, len(pods), func(i int) {
		if _, err := client.CoreV1().Pods(pods[i].Namespace).Create(ctx, pods[i], metav1.CreateOptions{}); err != nil {
			errs[i] = fmt.Errorf("creating pod %s: %w", podKey(pods[i]), err)
		}
	})
	return errors.Join(errors.Join(errs...), ctx.Err())
}
