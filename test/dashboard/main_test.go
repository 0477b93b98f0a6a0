// Package dashboard drives muster's web dashboard in a real browser (Debian's headless
// chromium, through chromedp) against the sandbox: the two-jobs example, each job's
// GPUs coloured as muster decided, the waiting group's verdict, the live update when
// the first job ends. It saves screenshots (see -screenshots).
package dashboard

import (
	"context"
	"errors"
	"flag"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/controller"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

var screenshots = flag.String("screenshots", "", "directory to save the screenshots in (docs/img to refresh the docs'); default: the test's temporary directory")

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{}))
}

// startMuster runs muster against the sandbox, as muster serve does, with its dashboard
// on a free loopback port, and returns the dashboard's URL and a function that stops
// muster (called again when the test ends, it does nothing).
func startMuster(t *testing.T, env *sandboxtest.Env) (string, func()) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "muster-system"}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cfg := musterv1alpha1.DefaultConfiguration()
	disabled := false
	cfg.LeaderElection.Enabled = &disabled
	cfg.MetricsAddr, cfg.HealthAddr, cfg.DashboardAddr = musterv1alpha1.DisabledAddr, musterv1alpha1.DisabledAddr, "127.0.0.1:0"
	urls := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, controller.Options{
			Config: env.Config, Configuration: cfg, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
			DashboardListening: func(url string) { urls <- url },
		})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("muster stopped with an error: %v", err)
				}
			case <-time.After(sandboxtest.WaitTimeout):
				t.Errorf("muster did not stop within %s", sandboxtest.WaitTimeout)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case url := <-urls:
		return url, stop
	case err := <-done:
		t.Fatalf("muster stopped before serving its dashboard: %v", err)
	case <-time.After(2 * sandboxtest.WaitTimeout):
		t.Fatalf("muster's dashboard did not listen within %s", 2*sandboxtest.WaitTimeout)
	}
	return "", stop
}
