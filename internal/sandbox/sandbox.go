// Package sandbox runs a Kubernetes control plane in-process — embedded etcd and
// kube-apiserver from the Kubernetes Go modules — with muster's CRDs installed and a
// simulated cluster of GPU nodes whose kubelet is simulated by package kubelet.
// Nothing is downloaded at run time. It backs `muster sandbox` and the integration
// tests (see package sandboxtest).
//
// The API server serves the native Workload/PodGroup API
// (scheduling.k8s.io/v1beta1 with the GenericWorkload feature gate). No
// controller-manager runs, only the upstream controllers of it that the sandbox's
// users need (see controllers: PodGroup protection, Job, and the volume controllers):
// admission plugins that depend on the others (ServiceAccount,
// TaintNodesByCondition) are disabled, nothing garbage-collects owned objects, and
// the simulated kubelet does what the node lifecycle controller would for a node
// marked down.
//
// Storage works as on a cluster with a CSI driver (see storage.go and provisioner):
// StorageClasses muster-local (WaitForFirstConsumer) and muster-standard (Immediate)
// of a simulated driver whose provisioner makes the volumes the PV controller asks
// for, a CSINode per node with the driver's volume limit, and a kubelet that starts a
// pod only once its claims are bound to volumes its node can reach.
//
// Devices work as on a cluster with NVIDIA's DRA driver (resource.k8s.io/v1, see
// dra.go and draDriver): a node with DRA GPUs (NodePool.DRAGPUs; PresetDRA) has one
// ResourceSlice of driver gpu.nvidia.com, pool named after the node, with a device
// gpu-<i> per GPU whose attributes are productName (string), index (int) and
// cliqueID (string, the node's NVLink domain, label nvidia.com/gpu.clique) and whose
// capacity is memory (80Gi); the DeviceClass gpu.nvidia.com selects
// device.driver == "gpu.nvidia.com". Upstream's resourceclaim controller makes the
// claims of ResourceClaimTemplates and releases those of finished pods, and the
// kubelet starts a pod only once each of its claims is allocated to devices its node
// can reach and reserved for it (or its PodGroup). Nothing allocates claims: that is
// the scheduler's job.
//
// measure.sh in this directory measures, from a built binary, the time until the
// sandbox answers API requests and its resident memory with 1,000 nodes.
package sandbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"

	"go.etcd.io/etcd/server/v3/embed"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	"github.com/muster-sched/muster/deploy"
	"github.com/muster-sched/muster/internal/sandbox/kubelet"
)

// apiServerFlags are the kube-apiserver flags of every sandbox.
var apiServerFlags = []string{
	// Serve the native gang-scheduling API (Workload, PodGroup), and PodGroups'
	// spec.resourceClaims (claims shared by a gang, DRAWorkloadResourceClaims, beta
	// and off by default in 1.37). resource.k8s.io/v1 (DRA) is served by default.
	"--runtime-config=scheduling.k8s.io/v1beta1=true",
	"--feature-gates=GenericWorkload=true,DRAWorkloadResourceClaims=true",
	// No controller-manager creates ServiceAccounts, and none lifts the not-ready
	// taint TaintNodesByCondition puts on new nodes.
	"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	"--endpoint-reconciler-type=none",
	// Authorize with RBAC, so that a client impersonating muster's ServiceAccount
	// is held to deploy/rbac; the sandbox's own clients are system:masters.
	"--authorization-mode=RBAC",
}

// Options configures a sandbox.
type Options struct {
	// Cluster is the simulated cluster whose nodes are created; with no pools, no
	// nodes are created.
	Cluster Cluster
	// CRDs are installed and awaited until Established. Nil installs muster's own
	// (deploy.CRDs); an empty, non-nil slice installs none.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Kubelet configures the simulated kubelet; its Client is set by the sandbox.
	Kubelet kubelet.Config
	// VolumeLimit is each node's CSINode allocatable count of the sandbox's CSI driver
	// (StorageDriver): how many of its volumes kube-scheduler's NodeVolumeLimits lets a
	// node's pods use. 0 means DefaultVolumeLimit.
	VolumeLimit int
	// Log receives the control plane's logs; nil discards them. Logging of the
	// Kubernetes libraries is process-wide (klog), so this affects the process.
	Log io.Writer
}

// Sandbox is a running in-process control plane with a simulated cluster.
type Sandbox struct {
	tb         *serverTB
	etcd       *embed.Etcd
	server     kubeapiservertesting.TestServer
	restConfig *rest.Config
	kubelet    *kubelet.Kubelet
	ctrls      *controllers
	stopOnce   sync.Once
}

// Start starts etcd and kube-apiserver, installs the CRDs, creates the cluster's
// nodes, installs the storage (StorageClasses, CSIDriver, a CSINode per node) and the
// devices (DeviceClasses, a ResourceSlice per node with DRA GPUs), and starts the
// upstream controllers the sandbox needs (see controllers) and the simulated kubelet.
// ctx bounds the start only; the sandbox runs until Stop. On error, everything
// started so far is stopped.
func Start(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	limit, err := volumeLimit(opts.VolumeLimit)
	if err != nil {
		return nil, err
	}
	configureLogging(opts.Log)
	s := &Sandbox{tb: &serverTB{log: opts.Log}}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if s.etcd, err = startEtcd(); err != nil {
		return nil, err
	}
	if err := s.startAPIServer(); err != nil {
		return nil, err
	}
	crds := opts.CRDs
	if crds == nil {
		if crds, err = deploy.CRDs(); err != nil {
			return nil, fmt.Errorf("loading muster's CRDs: %w", err)
		}
	}
	if err := installCRDs(ctx, s.restConfig, crds); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(s.restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	if len(opts.Cluster.Pools) > 0 {
		if err := CreateNodes(ctx, client, opts.Cluster); err != nil {
			return nil, err
		}
	}
	if err := installStorage(ctx, client); err != nil {
		return nil, err
	}
	if err := createCSINodes(ctx, client, limit); err != nil {
		return nil, err
	}
	if err := installDRA(ctx, client); err != nil {
		return nil, err
	}
	if err := createResourceSlices(ctx, client); err != nil {
		return nil, err
	}
	if s.ctrls, err = startControllers(client, limit); err != nil {
		return nil, err
	}
	kcfg := opts.Kubelet
	kcfg.Client = client
	if s.kubelet, err = kubelet.New(kcfg); err != nil {
		return nil, err
	}
	if err := s.kubelet.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	return s, nil
}

// volumeLimit is the CSINode allocatable count for Options.VolumeLimit n.
func volumeLimit(n int) (int32, error) {
	if n == 0 {
		return DefaultVolumeLimit, nil
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("sandbox options VolumeLimit: expected 0 (default %d) or a positive count, found %d", DefaultVolumeLimit, n)
	}
	return int32(n), nil
}

// startAPIServer starts kube-apiserver on a free 127.0.0.1 port, backed by s.etcd.
func (s *Sandbox) startAPIServer() (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("starting kube-apiserver: %s", f.msg)
		}
	}()
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{"http://" + s.etcd.Clients[0].Addr().String()}
	// EnableCertAuth gives the API server a front-proxy CA and client certificate, as a
	// cluster's has: its aggregator forwards requests for muster's visibility API with
	// the caller's identity, which muster verifies against that CA.
	opts := &kubeapiservertesting.TestServerInstanceOptions{DisableInvariantChecks: true, EnableCertAuth: true}
	s.server, err = kubeapiservertesting.StartTestServer(s.tb, opts, apiServerFlags, storage)
	if err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	s.restConfig = rest.CopyConfig(s.server.ClientConfig)
	s.restConfig.QPS, s.restConfig.Burst = 5000, 10000
	return nil
}

// configureLogging sends klog's output (used by the Kubernetes libraries) to w only,
// errors included.
func configureLogging(w io.Writer) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(name, value); err != nil {
			panic(fmt.Sprintf("klog flag %s=%s: %v", name, value, err)) // klog's own flags: cannot fail
		}
	}
	klog.SetOutput(w)
}

// RESTConfig returns a copy of the configuration of a client with full access.
func (s *Sandbox) RESTConfig() *rest.Config {
	return rest.CopyConfig(s.restConfig)
}

// Kubelet returns the simulated kubelet of the sandbox's nodes.
func (s *Sandbox) Kubelet() *kubelet.Kubelet {
	return s.kubelet
}

// ListenAddresses returns the host:port addresses the sandbox listens on: the API
// server's and etcd's client and peer ports. After Stop, none accepts connections.
func (s *Sandbox) ListenAddresses() []string {
	addrs := []string{strings.TrimPrefix(s.restConfig.Host, "https://")}
	for _, l := range s.etcd.Clients {
		addrs = append(addrs, l.Addr().String())
	}
	for _, p := range s.etcd.Peers {
		addrs = append(addrs, p.Listener.Addr().String())
	}
	return addrs
}

// WriteKubeconfig writes a kubeconfig file for kubectl and other clients to path,
// readable by the owner only. It is valid while the sandbox runs.
func (s *Sandbox) WriteKubeconfig(path string) error {
	const name = "muster-sandbox"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   s.restConfig.Host,
		CertificateAuthorityData: s.restConfig.CAData,
		TLSServerName:            s.restConfig.ServerName,
	}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: s.restConfig.BearerToken}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// Stop stops the kubelet, the controllers, kube-apiserver and etcd, and removes their temporary
// files. It returns the errors the control plane reported while running, if any.
// Calling it again does nothing.
func (s *Sandbox) Stop() error {
	var errs []error
	s.stopOnce.Do(func() {
		if s.kubelet != nil {
			s.kubelet.Stop()
		}
		if s.ctrls != nil {
			s.ctrls.stop()
		}
		if s.server.TearDownFn != nil {
			s.server.TearDownFn()
		}
		if s.etcd != nil {
			stopEtcd(s.etcd)
		}
		s.tb.runCleanups()
		for _, msg := range s.tb.errors() {
			errs = append(errs, errors.New(msg))
		}
	})
	return errors.Join(errs...)
}
