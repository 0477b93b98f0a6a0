// Package dashboard drives muster's web dashboard in a real browser (Debian's headless
// chromium, through chromedp) against the sandbox: the two-jobs example, each job's
// GPUs coloured as muster decided, the waiting group's verdict, the live update when
// the first job ends. It saves screenshots (see -screenshots).
package dashboard

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

var screenshots = flag.String("screenshots", "", "directory to save the screenshots in (docs/img to refresh the docs'); default: the test's temporary directory")

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	os.Exit(sandboxtest.Run(m, sandboxtest.Options{}))
}

// startMuster runs muster against the sandbox as it is deployed (a `muster serve`
// process with deploy/'s Configuration, RBAC and ServiceAccount) with its dashboard on
// a free loopback port, and returns the dashboard's URL once it answers, and a function
// that stops muster (called again when the test ends, it does nothing).
func startMuster(t *testing.T, env *sandboxtest.Env) (string, func()) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "muster-system"}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	addr := sandboxtest.FreeAddr(t)
	m := env.StartMuster(t, sandboxtest.MusterOptions{Configure: func(cfg *musterv1alpha1.Configuration) {
		cfg.DashboardAddr = addr
	}})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := m.Stop(sandboxtest.WaitTimeout); err != nil {
				t.Errorf("stopping muster: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	url := "http://" + addr + "/"
	env.WaitFor(t, "muster's dashboard to answer at "+url, func(ctx context.Context) (bool, error) {
		select {
		case <-m.Done():
			return false, fmt.Errorf("muster stopped before serving its dashboard: %v", m.Err())
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil // not listening yet, or not leading yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return url, stop
}
