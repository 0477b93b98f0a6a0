// Package visibility serves muster's visibility API, visibility.muster.dev/v1alpha1:
// an aggregated API (the API server forwards its requests to muster, named by an
// APIService) that answers, with muster's rights and from muster's cache, what a
// tenant's `muster explain` may not read itself. Requests are authenticated and
// authorized by the API server's own rules, delegated with TokenReview and
// SubjectAccessReview (k8s.io/apiserver's delegating authentication and
// authorization): a caller may get the explanation of a group in a namespace where
// RBAC lets it get explanations.visibility.muster.dev.
package visibility

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/muster-sched/muster/internal/explain"
)

// Options configure a Server.
type Options struct {
	// BindAddress is the host:port to serve HTTPS on (a fixed port).
	BindAddress string
	// CertDir holds tls.crt and tls.key; when they are missing a self-signed pair is
	// written there, or kept in memory when CertDir is empty.
	CertDir string
	// ServiceName and ServiceNamespace name the Service the APIService routes through:
	// a self-signed certificate is valid for its DNS names.
	ServiceName, ServiceNamespace string
	// Kubeconfig is the file muster reaches the API server with, for TokenReview,
	// SubjectAccessReview and the API server's authentication ConfigMap; empty means
	// the in-cluster configuration.
	Kubeconfig string
	// Reader is muster's cache.
	Reader client.Reader
	// Mapper resolves kinds to resources for the explain walk: the controller-runtime
	// manager's RESTMapper.
	Mapper meta.RESTMapper
	// SchedulerNames are the schedulerNames muster serves, its Configuration's
	// schedulerName first.
	SchedulerNames []string
	// Clock stamps the answers; nil means the real clock.
	Clock clock.PassiveClock
	// Log receives the server's log lines.
	Log logr.Logger
	// Dashboard, if set, is served at DashboardPath (it serves from "/": the server
	// strips the path).
	Dashboard http.Handler
}

// DashboardPath is where the dashboard is served, behind the API server: requests are
// authorized as get (or list, for the first page) on dashboard.visibility.muster.dev.
var DashboardPath = "/apis/" + explain.VisibilityGroup + "/" + explain.VisibilityVersion + "/" + DashboardResource

// DashboardResource is the resource the dashboard's paths are authorized as.
const DashboardResource = "dashboard"

// Server is the visibility API's HTTPS server, a manager.Runnable served by every
// replica (the Service routes to any).
type Server struct {
	server *genericapiserver.GenericAPIServer
	opts   Options
}

var _ manager.LeaderElectionRunnable = (*Server)(nil)

// certPair is the base name of the serving certificate's files in CertDir, as a
// kubernetes.io/tls Secret mounts them.
const certPair = "tls"

// New builds the server; it listens when started.
func New(opts Options) (*Server, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	cfg := genericapiserver.NewConfig(serializer.NewCodecFactory(scheme))
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	if err := applyServing(cfg, opts); err != nil {
		return nil, err
	}
	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = opts.Kubeconfig
	if err := authn.ApplyTo(&cfg.Authentication, cfg.SecureServing, nil); err != nil {
		return nil, fmt.Errorf("visibility API: delegating authentication: %w", err)
	}
	authz := genericoptions.NewDelegatingAuthorizationOptions().
		WithAlwaysAllowPaths("/healthz", "/readyz", "/livez").
		WithAlwaysAllowGroups("system:masters")
	authz.RemoteKubeConfigFile = opts.Kubeconfig
	if err := authz.ApplyTo(&cfg.Authorization); err != nil {
		return nil, fmt.Errorf("visibility API: delegating authorization: %w", err)
	}
	srv, err := cfg.Complete(nil).New("muster-visibility", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("visibility API: %w", err)
	}
	s := &Server{server: srv, opts: opts}
	s.install()
	return s, nil
}

// applyServing sets cfg's HTTPS serving from opts, with a self-signed certificate for
// the Service's names when CertDir has none.
func applyServing(cfg *genericapiserver.Config, opts Options) error {
	host, portText, err := net.SplitHostPort(opts.BindAddress)
	if err != nil {
		return fmt.Errorf("visibility.bindAddress %q: %w", opts.BindAddress, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 {
		return fmt.Errorf("visibility.bindAddress %q: expected a fixed port", opts.BindAddress)
	}
	serving := genericoptions.NewSecureServingOptions().WithLoopback()
	serving.BindPort = port
	if host != "" {
		if serving.BindAddress = net.ParseIP(host); serving.BindAddress == nil {
			return fmt.Errorf("visibility.bindAddress %q: expected an IP address as its host", opts.BindAddress)
		}
	}
	serving.ServerCert.CertDirectory, serving.ServerCert.PairName = opts.CertDir, certPair
	svc := opts.ServiceName + "." + opts.ServiceNamespace
	names := []string{svc + ".svc", svc + ".svc.cluster.local", svc, "localhost"}
	if err := serving.MaybeDefaultWithSelfSignedCerts(names[0], names, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return fmt.Errorf("visibility API: a self-signed certificate: %w", err)
	}
	if err := serving.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return fmt.Errorf("visibility API: serving on %s: %w", opts.BindAddress, err)
	}
	return nil
}

// install adds the API's discovery documents and its one resource.
func (s *Server) install() {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: explain.VisibilityGroup + "/" + explain.VisibilityVersion, Version: explain.VisibilityVersion}
	group := metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     explain.VisibilityGroup, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv,
	}
	s.server.DiscoveryGroupManager.AddGroup(group)
	s.server.AggregatedDiscoveryGroupManager.AddGroupVersion(explain.VisibilityGroup, apidiscoveryv2.APIVersionDiscovery{
		Version: explain.VisibilityVersion,
		Resources: []apidiscoveryv2.APIResourceDiscovery{{
			Resource: explain.ExplanationsResource, Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{"get"},
			ResponseKind: &metav1.GroupVersionKind{Group: explain.VisibilityGroup, Version: explain.VisibilityVersion, Kind: explain.ExplanationKind},
		}},
	})
	resources := metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.GroupVersion,
		APIResources: []metav1.APIResource{{Name: explain.ExplanationsResource, Namespaced: true, Kind: explain.ExplanationKind, Verbs: []string{"get"}}},
	}
	mux := s.server.Handler.NonGoRestfulMux
	mux.Handle("/apis/"+explain.VisibilityGroup, jsonHandler(group))
	mux.Handle("/apis/"+gv.GroupVersion, jsonHandler(resources))
	mux.HandlePrefix("/apis/"+gv.GroupVersion+"/", http.HandlerFunc(s.serveResource))
	if s.opts.Dashboard != nil {
		// A relative Location: the API server's proxy would point an absolute one at
		// muster's own address.
		mux.Handle(DashboardPath, http.RedirectHandler(DashboardResource+"/", http.StatusMovedPermanently))
		mux.HandlePrefix(DashboardPath+"/", http.StripPrefix(DashboardPath, s.opts.Dashboard))
	}
}

// NeedLeaderElection reports that every replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx is done.
func (s *Server) Start(ctx context.Context) error {
	s.opts.Log.Info("serving the visibility API", "address", s.opts.BindAddress, "group", explain.VisibilityGroup)
	err := s.server.PrepareRun().RunWithContext(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serving the visibility API: %w", err)
	}
	return nil
}

// answerTimeout bounds the work of one answer.
const answerTimeout = 10 * time.Second
