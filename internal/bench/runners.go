package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/deploy"
	"github.com/muster-sched/muster/internal/sandbox"
)

// Runner names.
const (
	// RunnerKubeSchedulerDefaults is kube-scheduler with its default profile and its
	// default client settings (QPS 50, burst 100), given plain pods: no gang.
	RunnerKubeSchedulerDefaults = "kube-scheduler-defaults"
	// RunnerKubeSchedulerQPS is kube-scheduler with its default profile, its client's
	// QPS and burst raised to the bench's (Options.QPS), given plain pods.
	RunnerKubeSchedulerQPS = "kube-scheduler-qps"
	// RunnerKubeSchedulerGang is kube-scheduler with GenericWorkload gang scheduling
	// and the bench's QPS, given native v1beta1 PodGroups.
	RunnerKubeSchedulerGang = "kube-scheduler-gang"
	// RunnerMusterDefaults is `muster serve` as deployed — its own process, deploy/'s
	// Configuration unchanged, as deploy/'s ServiceAccount — given the same native
	// PodGroups.
	RunnerMusterDefaults = "muster-defaults"
	// RunnerMusterQPS is RunnerMusterDefaults with the Configuration's
	// clientConnection qps and burst raised to the bench's (Options.QPS).
	RunnerMusterQPS = "muster-qps"
	// RunnerCeiling binds pods to precomputed nodes without deciding anything.
	RunnerCeiling = "ceiling"
)

// Runners lists the runner names in the order they run and appear in the table.
func Runners() []string {
	return []string{RunnerKubeSchedulerDefaults, RunnerKubeSchedulerQPS, RunnerKubeSchedulerGang, RunnerMusterDefaults, RunnerMusterQPS, RunnerCeiling}
}

// runEnv is what a runner is started with.
type runEnv struct {
	// config reaches the sandbox with full access and the bench's client settings
	// (QPS, burst, protobuf).
	config *rest.Config
	// kubeconfig is a kubeconfig file for the sandbox, for kube-scheduler.
	kubeconfig string
	// musterBinary is the muster executable that muster runners run as `muster serve`,
	// and dir a directory for its files.
	musterBinary, dir string
	// work is the workload the runner schedules; nodes are the cluster's node names
	// in creation order and gpusPerNode their GPUs (for the ceiling's assignment).
	work        workload
	nodes       []string
	gpusPerNode int
	// probe is a pod without GPUs that the runner must bind before the workload is
	// created: it shows the scheduler is up and its caches synced.
	probe *corev1.Pod
	// log receives the scheduler's log lines; io.Discard drops them.
	log io.Writer
	// serveProfile, if set, is where `muster serve`'s CPU profiles go: the path
	// without the "-<k>.pprof" of each.
	serveProfile string
}

// runner is one scheduler under test.
type runner interface {
	// podSpec says how the runner's pods are shaped.
	podSpec() podSpec
	// start starts the scheduler; it runs until ctx ends, and wait then returns the
	// error that stopped it early, if any.
	start(ctx context.Context, env runEnv) (wait func() error, err error)
}

// newRunner returns the runner of a name.
func newRunner(name string) (runner, error) {
	switch name {
	case RunnerKubeSchedulerDefaults:
		return upstream{gang: false, defaults: true}, nil
	case RunnerKubeSchedulerQPS:
		return upstream{gang: false}, nil
	case RunnerKubeSchedulerGang:
		return upstream{gang: true}, nil
	case RunnerMusterDefaults:
		return musterRunner{}, nil
	case RunnerMusterQPS:
		return musterRunner{raiseQPS: true}, nil
	case RunnerCeiling:
		return ceiling{}, nil
	}
	return nil, fmt.Errorf("runner: expected one of %v, found %q", Runners(), name)
}

// upstream runs kube-scheduler v1.37 in-process, as its command does, with the
// default profile; with defaults, its client keeps kube-scheduler's default QPS and
// burst.
type upstream struct{ gang, defaults bool }

func (u upstream) podSpec() podSpec {
	return podSpec{schedulerName: corev1.DefaultSchedulerName, gang: u.gang}
}

// start sets kube-scheduler up from its own flags and runs it. The GenericWorkload
// feature gate is process-wide: the sandbox's kube-apiserver, in this process,
// already turned it on, so the default profile runs with the gang plugins present;
// plain pods (no spec.schedulingGroup) do not use them.
func (u upstream) start(ctx context.Context, env runEnv) (func() error, error) {
	opts := scheduleroptions.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, set := range opts.Flags.FlagSets {
		fs.AddFlagSet(set)
	}
	args := []string{
		"--kubeconfig=" + env.kubeconfig,
		"--leader-elect=false", // with it, a stopped scheduler calls os.Exit
		"--secure-port=0",
	}
	if !u.defaults {
		args = append(args,
			"--kube-api-qps="+strconv.FormatFloat(float64(env.config.QPS), 'f', -1, 32),
			"--kube-api-burst="+strconv.Itoa(env.config.Burst))
	}
	if u.gang {
		args = append(args, "--feature-gates=GenericWorkload=true")
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube-scheduler flags %v: %w", args, err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, fmt.Errorf("kube-scheduler feature gates: %w", err)
	}
	// Run registers its configuration under this name and fails if it is taken by
	// an earlier run in this process.
	configz.Delete("componentconfig")
	// kube-scheduler logs through the context's logger.
	ctx = klog.NewContext(ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(env.log))))
	cc, sched, err := schedulerapp.Setup(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("setting up kube-scheduler: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- schedulerapp.Run(ctx, cc, sched) }()
	return func() error {
		err := <-errc
		if ctx.Err() != nil {
			return nil // Run always returns an error; after ctx ends it is the normal stop
		}
		return fmt.Errorf("kube-scheduler stopped before the run ended: %w", err)
	}, nil
}

// musterRunner runs `muster serve` as deployed (sandbox.StartMuster): its own
// process from env.musterBinary, deploy/'s Configuration with the metrics and health
// servers on free loopback ports, as deploy/'s ServiceAccount, over the network to
// the sandbox. With raiseQPS, its clientConnection has the bench's QPS and burst.
type musterRunner struct {
	raiseQPS bool
}

func (musterRunner) podSpec() podSpec {
	return podSpec{schedulerName: musterv1alpha1.DefaultConfiguration().SchedulerName, gang: true}
}

func (r musterRunner) start(ctx context.Context, env runEnv) (func() error, error) {
	var configure func(*musterv1alpha1.Configuration)
	if r.raiseQPS {
		configure = func(cfg *musterv1alpha1.Configuration) {
			cfg.ClientConnection.QPS, cfg.ClientConnection.Burst = env.config.QPS, int32(env.config.Burst)
		}
	}
	m, _, err := startMusterProcess(ctx, env, configure)
	if err != nil {
		return nil, err
	}
	return func() error {
		<-ctx.Done()
		if err := m.Stop(musterStopTimeout); err != nil {
			return fmt.Errorf("muster serve: %w", err)
		}
		return nil
	}, nil
}

// musterStopTimeout bounds the wait for `muster serve` to exit after SIGTERM.
const musterStopTimeout = 30 * time.Second

// startMusterProcess starts `muster serve` for env and returns it with the address
// of its metrics server.
func startMusterProcess(ctx context.Context, env runEnv, configure func(*musterv1alpha1.Configuration)) (*sandbox.Muster, string, error) {
	if env.musterBinary == "" {
		return nil, "", errors.New("muster runner: expected the muster executable (Options.MusterBinary), found none")
	}
	cfg, err := deploy.ParsedConfiguration()
	if err != nil {
		return nil, "", err
	}
	addrs, err := sandbox.FreeLoopbackAddrs(3)
	if err != nil {
		return nil, "", err
	}
	metricsAddr := addrs[0]
	cfg.MetricsAddr, cfg.HealthAddr = metricsAddr, addrs[1]
	if env.serveProfile != "" {
		cfg.PprofAddr = addrs[2]
	}
	cfg.Visibility.BindAddress = musterv1alpha1.DisabledAddr
	if configure != nil {
		configure(cfg)
	}
	m, err := sandbox.StartMuster(ctx, sandbox.MusterOptions{
		Binary: env.musterBinary, Admin: env.config, Configuration: cfg, Dir: env.dir, Log: env.log,
	})
	if err != nil {
		return nil, "", err
	}
	if env.serveProfile != "" {
		go profileServe(ctx, cfg.PprofAddr, env.serveProfile, env.log)
	}
	go func() { // the process outlives no run
		<-ctx.Done()
		select {
		case <-m.Done():
		case <-time.After(musterStopTimeout):
			_ = m.Kill()
		}
	}()
	return m, metricsAddr, nil
}

// ceiling binds each pod, as soon as it is seen, to a node computed in advance
// (first fit in creation order), through the Binding subresource like a scheduler.
// It makes no decision and keeps no state beyond the assignment, so its throughput
// is what the API server allows with these client settings.
type ceiling struct{}

// ceilingSchedulerName keeps the ceiling's pods away from every real scheduler.
const ceilingSchedulerName = "bench-ceiling"

// ceilingWorkers is how many binds the ceiling issues concurrently.
const ceilingWorkers = 64

func (ceiling) podSpec() podSpec { return podSpec{schedulerName: ceilingSchedulerName, gang: true} }

func (ceiling) start(ctx context.Context, env runEnv) (func() error, error) {
	assign, err := firstFit(env.work.pods, env.nodes, env.gpusPerNode)
	if err != nil {
		return nil, err
	}
	assign[podKey(env.probe)] = env.nodes[0]
	client, err := kubernetes.NewForConfig(env.config)
	if err != nil {
		return nil, fmt.Errorf("creating the ceiling's client: %w", err)
	}
	todo := make(chan *corev1.Pod, len(assign))
	f := informers.NewSharedInformerFactory(client, 0)
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "" && assign[podKey(p)] != "" {
				todo <- p
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watching pods for the ceiling: %w", err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	var wg sync.WaitGroup
	errs := make([]error, ceilingWorkers)
	for w := range ceilingWorkers {
		wg.Go(func() { errs[w] = bindLoop(ctx, client, todo, assign) })
	}
	return func() error {
		wg.Wait()
		f.Shutdown()
		return errors.Join(errs...)
	}, nil
}

// bindLoop binds the pods it receives until ctx ends, returning the first error.
func bindLoop(ctx context.Context, client kubernetes.Interface, todo <-chan *corev1.Pod, assign map[string]string) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case p := <-todo:
			b := &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: assign[podKey(p)]},
			}
			if err := client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				return fmt.Errorf("ceiling: binding %s to %s: %w", podKey(p), b.Target.Name, err)
			}
		}
	}
}

// firstFit assigns the one-GPU pods, in order, to nodes of gpusPerNode GPUs.
func firstFit(pods []*corev1.Pod, nodes []string, gpusPerNode int) (map[string]string, error) {
	if gpusPerNode < 1 || len(pods) > len(nodes)*gpusPerNode {
		return nil, fmt.Errorf("ceiling: expected room for %d one-GPU pods, found %d nodes of %d GPUs", len(pods), len(nodes), gpusPerNode)
	}
	assign := make(map[string]string, len(pods))
	for i, p := range pods {
		assign[podKey(p)] = nodes[i/gpusPerNode]
	}
	return assign, nil
}

// podKey returns namespace/name.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// serveProfileChunk is the length of each CPU profile taken of `muster serve`.
const serveProfileChunk = 20 * time.Second

// profileServe takes CPU profiles of the `muster serve` whose pprof server is at addr,
// one after the other until ctx ends, into prefix-1.pprof, prefix-2.pprof and so on.
// The last is cut short when the run ends and is lost: at most one chunk.
func profileServe(ctx context.Context, addr, prefix string, log io.Writer) {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(serveProfileChunk/time.Second))
	for k := 1; ctx.Err() == nil; k++ {
		if err := fetchProfile(ctx, url, fmt.Sprintf("%s-%d.pprof", prefix, k)); err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(log, "profiling muster serve: %v\n", err)
				select { // not up yet, say: try again shortly
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}
}

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}
