package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/internal/explain"
)

// visibilityAPIService is the name of the APIService of muster's visibility API.
var visibilityAPIService = explain.VisibilityVersion + "." + explain.VisibilityGroup

// visibilityTimeout bounds the wait for the APIService to be Available.
const visibilityTimeout = time.Minute

// RegisterVisibility routes the sandbox API server's requests for muster's visibility
// API to m, a `muster serve` on this machine given cfg, whose visibility.bindAddress is
// 127.0.0.1:PORT and whose visibility.certDir receives its self-signed certificate:
// as deploy/visibility does in a cluster, with an APIService (its caBundle that
// certificate), but through an ExternalName Service for localhost (a sandbox has no
// Service network). It waits for the certificate, then until the APIService is
// Available.
func RegisterVisibility(ctx context.Context, admin *rest.Config, cfg *musterv1alpha1.Configuration, m *Muster) error {
	caBundle, err := waitCertificate(ctx, filepath.Join(cfg.Visibility.CertDir, "tls.crt"), m)
	if err != nil {
		return err
	}
	addr := cfg.Visibility.BindAddress
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("visibility address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("visibility address %q: %w", addr, err)
	}
	kube, agg, err := visibilityClients(admin)
	if err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Visibility.ServiceName},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	apiService := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: visibilityAPIService},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: explain.VisibilityGroup, Version: explain.VisibilityVersion,
			Service:              &apiregistrationv1.ServiceReference{Namespace: svc.Namespace, Name: svc.Name, Port: ptr.To(int32(port))},
			CABundle:             caBundle,
			GroupPriorityMinimum: 1000, VersionPriority: 15,
		},
	}
	api := agg.ApiregistrationV1().APIServices()
	if _, err := api.Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating APIService %s: %w", apiService.Name, err)
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, visibilityTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := api.Get(ctx, apiService.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				last = fmt.Sprintf("%s (%s: %s)", c.Status, c.Reason, c.Message)
				return c.Status == apiregistrationv1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s: expected Available, found %s: %w", apiService.Name, last, err)
	}
	return nil
}

// UnregisterVisibility deletes what RegisterVisibility created.
func UnregisterVisibility(ctx context.Context, admin *rest.Config, cfg *musterv1alpha1.Configuration) error {
	kube, agg, err := visibilityClients(admin)
	if err != nil {
		return err
	}
	if err := agg.ApiregistrationV1().APIServices().Delete(ctx, visibilityAPIService, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting APIService %s: %w", visibilityAPIService, err)
	}
	err = kube.CoreV1().Services(cfg.Namespace).Delete(ctx, cfg.Visibility.ServiceName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Service %s/%s: %w", cfg.Namespace, cfg.Visibility.ServiceName, err)
	}
	return nil
}

// visibilityClients returns the clientsets RegisterVisibility writes with.
func visibilityClients(admin *rest.Config) (kubernetes.Interface, aggregator.Interface, error) {
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, nil, fmt.Errorf("creating a clientset: %w", err)
	}
	agg, err := aggregator.NewForConfig(admin)
	if err != nil {
		return nil, nil, fmt.Errorf("creating an aggregator clientset: %w", err)
	}
	return kube, agg, nil
}

// waitCertificate waits up to visibilityTimeout for m to write the certificate file.
func waitCertificate(ctx context.Context, file string, m *Muster) ([]byte, error) {
	deadline := time.Now().Add(visibilityTimeout)
	for {
		if ca, err := os.ReadFile(file); err == nil && len(ca) > 0 {
			return ca, nil
		}
		select {
		case <-m.Done():
			return nil, fmt.Errorf("muster (pid %d) exited before writing its certificate %s: %v", m.PID(), file, m.Err())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("expected muster's certificate at %s within %s, found none", file, visibilityTimeout)
		}
	}
}
