package helm

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestDryRunOnSandbox renders the chart (ServiceMonitor on, to apply it too) and applies
// every object to the sandbox's API server with server-side apply and dry-run, so that
// the API server validates them as a real install would. The sandbox serves no
// monitoring.coreos.com API, so the ServiceMonitor is the one object it cannot take:
// the test expects exactly that refusal.
func TestDryRunOnSandbox(t *testing.T) {
	env := sandboxtest.Shared(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "muster-system"}}
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	objs, err := render(t, "serviceMonitor.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if gvk.Kind == "ServiceMonitor" {
			if err == nil {
				t.Errorf("the sandbox serves %s; apply it too", gvk)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", key(o), err)
			continue
		}
		_, err = env.Dynamic.Resource(m.Resource).Namespace(o.GetNamespace()).Apply(ctx, o.GetName(), o,
			metav1.ApplyOptions{FieldManager: "muster-helm-test", Force: true, DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Errorf("server-side dry-run apply of %s: %v", key(o), err)
			continue
		}
		applied++
	}
	t.Logf("%d of %d rendered objects applied with dry-run; the ServiceMonitor skipped (no monitoring.coreos.com in the sandbox)", applied, len(objs))
	if applied != len(objs)-1 {
		t.Errorf("applied %d of %d objects, want all but the ServiceMonitor", applied, len(objs))
	}
}
