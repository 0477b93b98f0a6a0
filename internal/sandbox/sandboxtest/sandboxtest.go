// Package sandboxtest runs one sandbox (a real kube-apiserver with simulated nodes,
// see package sandbox) per test package and gives its tests clients and helpers:
//
//	func TestMain(m *testing.M) { os.Exit(sandboxtest.Run(m, sandboxtest.Options{})) }
//
//	func TestSomething(t *testing.T) {
//		env := sandboxtest.Shared(t)
//		ns := env.Namespace(t)
//		nodes := env.CreateNodes(t, sandbox.NodePool{Name: "sth", Count: 2, CPU: "8", Memory: "32Gi", GPUs: 4})
//		pod := env.CreatePod(t, sandboxtest.Pod(ns, "worker-0").GPUs(1).Obj())
//		env.Bind(t, pod, nodes[0])
//		env.WaitForPod(t, pod, "Ready", sandboxtest.PodReady)
//	}
//
// With Options.FakeClock, the simulated kubelet runs on a fake clock that every poll
// of a Wait helper steps forward, so timelines of minutes take a moment of real time.
package sandboxtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
)

// Options configures the sandbox of a test package.
type Options struct {
	// Cluster is created at start; the zero value creates no nodes (tests create
	// their own with Env.CreateNodes).
	Cluster sandbox.Cluster
	// Timing is the kubelet's pod timeline; zero means 100ms pull, 100ms to Ready
	// (or 2s and 1s of fake time with FakeClock).
	Timing kubelet.Timing
	// FakeClock runs the kubelet on a fake clock that Wait helpers step by ClockStep
	// on every poll.
	FakeClock bool
	// ClockStep is how far each poll steps the fake clock; zero means 5s.
	ClockStep time.Duration
	// VolumeLimit is each node's CSINode allocatable count of the sandbox's CSI
	// driver; 0 means sandbox.DefaultVolumeLimit.
	VolumeLimit int
	// VerifyStop checks, after the tests and Stop, that no goroutine is left behind
	// (go.uber.org/goleak) and that no sandbox port still accepts connections; a
	// failure makes Run return 1.
	VerifyStop bool
}

// Env is the running sandbox of a test package and clients for it.
type Env struct {
	// Sandbox is the running sandbox.
	Sandbox *sandbox.Sandbox
	// Config reaches the API server with full access.
	Config *rest.Config
	// Kube is a client-go clientset.
	Kube kubernetes.Interface
	// Dynamic is a dynamic client.
	Dynamic dynamic.Interface
	// Client is a controller-runtime client whose scheme has the core types and
	// apiextensions/v1.
	Client client.Client
	// Clock is the kubelet's fake clock, or nil when it runs on the real clock.
	Clock *testingclock.FakeClock

	step time.Duration
}

var (
	sharedMu sync.Mutex
	shared   *Env
)

// Shared returns the sandbox of the test package, failing the test if TestMain did
// not start one with Run.
func Shared(t testing.TB) *Env {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		t.Fatal("sandboxtest: no sandbox; call sandboxtest.Run from TestMain")
	}
	return shared
}

// Kubelet returns the simulated kubelet.
func (e *Env) Kubelet() *kubelet.Kubelet { return e.Sandbox.Kubelet() }

// startTimeout bounds the start of the package's sandbox.
const startTimeout = 2 * time.Minute

// Run starts the package's sandbox, runs the tests, stops the sandbox and returns
// the exit code for os.Exit.
func Run(m *testing.M, opts Options) int {
	var before []goleak.Option
	if opts.VerifyStop {
		startProcessGoroutines()
		before = append([]goleak.Option{goleak.IgnoreCurrent()}, processWide...)
	}
	env, err := start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 1
	}
	sharedMu.Lock()
	shared = env
	sharedMu.Unlock()
	code := m.Run()
	if err := RemoveMusterBinary(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		code = max(code, 1)
	}
	addrs := env.Sandbox.ListenAddresses()
	if err := env.Sandbox.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest: the control plane reported errors:", err)
		code = max(code, 1)
	}
	if opts.VerifyStop {
		if err := verifyStopped(addrs, before); err != nil {
			fmt.Fprintln(os.Stderr, "sandboxtest: after Stop:", err)
			code = max(code, 1)
		}
	}
	return code
}

// start starts a sandbox for opts and makes its clients.
func start(opts Options) (*Env, error) {
	env := &Env{step: opts.ClockStep}
	timing := opts.Timing
	kcfg := kubelet.Config{}
	if opts.FakeClock {
		env.Clock = testingclock.NewFakeClock(time.Now())
		kcfg.Clock = env.Clock
		if env.step == 0 {
			env.step = 5 * time.Second
		}
		if timing == (kubelet.Timing{}) {
			timing = kubelet.Timing{PullDelay: 2 * time.Second, ReadyDelay: time.Second}
		}
	} else if timing == (kubelet.Timing{}) {
		timing = kubelet.Timing{PullDelay: 100 * time.Millisecond, ReadyDelay: 100 * time.Millisecond}
	}
	kcfg.Timing = timing
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{Cluster: opts.Cluster, Kubelet: kcfg, VolumeLimit: opts.VolumeLimit})
	if err != nil {
		return nil, err
	}
	if err := env.connect(sb); err != nil {
		_ = sb.Stop()
		return nil, err
	}
	return env, nil
}

// connect makes env's clients for sb.
func (e *Env) connect(sb *sandbox.Sandbox) error {
	e.Sandbox = sb
	return e.connectTo(sb.RESTConfig())
}

// connectTo makes env's clients for the API server cfg reaches.
func (e *Env) connectTo(cfg *rest.Config) error {
	e.Config = cfg
	var err error
	if e.Kube, err = kubernetes.NewForConfig(e.Config); err != nil {
		return fmt.Errorf("creating clientset: %w", err)
	}
	if e.Dynamic, err = dynamic.NewForConfig(e.Config); err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("creating controller-runtime client: %w", err)
	}
	return nil
}

// verifyStopped checks that no goroutine started since before is left and that
// none of addrs accepts connections.
func verifyStopped(addrs []string, before []goleak.Option) error {
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			_ = conn.Close()
			return fmt.Errorf("expected %s closed, found it accepting connections", a)
		}
	}
	return findLeaks(before)
}
