// Package observe checks what users see of muster on a real API server: the text of
// `muster explain` for each failure path of the guide (golden files in testdata/,
// regenerated with -rewrite), and the metrics muster serves.
package observe

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
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

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{}))
}

// startMuster runs muster in the test process against the sandbox and returns the address
// its metrics are served on. It stops when the test ends.
func startMuster(t *testing.T, env *sandboxtest.Env) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "muster-system"}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfg := musterv1alpha1.DefaultConfiguration()
	cfg.MetricsAddr, cfg.HealthAddr = addr, musterv1alpha1.DisabledAddr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, controller.Options{
			Config: env.Config, Configuration: cfg, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		})
	}()
	t.Cleanup(func() {
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
	return addr
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
}
