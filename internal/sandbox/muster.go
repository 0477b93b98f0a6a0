package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/deploy"
	"github.com/muster-sched/muster/internal/timeshift"
)

// MusterOptions configures a `muster serve` process started by StartMuster.
type MusterOptions struct {
	// Binary is the muster executable to run.
	Binary string
	// Admin reaches the cluster with full access: StartMuster applies deploy/'s RBAC
	// and asks for a token of muster's ServiceAccount with it. muster itself never
	// gets these credentials.
	Admin *rest.Config
	// Server and CAData are where muster connects, e.g. a proxy in front of the API
	// server; empty means Admin's host and CA.
	Server string
	CAData []byte
	// Configuration is written to the file muster reads with --config; nil means
	// deploy/'s (deploy.ParsedConfiguration).
	Configuration *musterv1alpha1.Configuration
	// Dir receives the kubeconfig and the Configuration file; it must exist.
	Dir string
	// Log receives muster's standard output and error; nil discards them.
	Log io.Writer
	// Verbosity is muster's --verbosity.
	Verbosity int
	// ClockAddr, if set, is a free loopback address where muster serves its test
	// clock (the hidden --test-clock-addr, package timeshift): its scheduling timers
	// run on real time plus an offset that Muster.Advance moves forward. Empty means
	// the real clock, as deployed.
	ClockAddr string
}

// Muster is a running `muster serve` process.
type Muster struct {
	*child
	clockAddr string
}

// tokenLifetime is how long the ServiceAccount token given to a muster process is
// valid (the API server may shorten it): longer than any test or bench run.
const tokenLifetime = 12 * time.Hour

// StartMuster starts `muster serve` as deployed: deploy/'s RBAC applied, as deploy/'s
// ServiceAccount (a token from the TokenRequest API), with the Configuration in a
// file, over the network to the API server. The process is killed if this process
// dies; it runs until stopped with Stop, Kill or Signal.
func StartMuster(ctx context.Context, opts MusterOptions) (*Muster, error) {
	if opts.Binary == "" || opts.Admin == nil || opts.Dir == "" {
		return nil, fmt.Errorf("starting muster: expected Binary, Admin and Dir set, found %q, %v, %q", opts.Binary, opts.Admin != nil, opts.Dir)
	}
	cfg := opts.Configuration
	if cfg == nil {
		var err error
		if cfg, err = deploy.ParsedConfiguration(); err != nil {
			return nil, err
		}
	}
	kubeconfig, err := writeMusterKubeconfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(opts.Dir, "config.yaml")
	if err := writeConfiguration(config, cfg); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	args := []string{"serve", "--kubeconfig=" + kubeconfig, "--config=" + config, "--verbosity=" + strconv.Itoa(opts.Verbosity)}
	if opts.ClockAddr != "" {
		args = append(args, "--test-clock-addr="+opts.ClockAddr)
	}
	cmd := exec.Command(opts.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "KUBECONFIG=") // only --kubeconfig
	c, err := startChild("muster", cmd)
	if err != nil {
		return nil, err
	}
	return &Muster{child: c, clockAddr: opts.ClockAddr}, nil
}

// ClockNow returns the time on the process's test clock (real time if it has none),
// waiting for the clock's endpoint while the process starts.
func (m *Muster) ClockNow(ctx context.Context) (time.Time, error) {
	if m.clockAddr == "" {
		return time.Now(), nil
	}
	r, err := m.callClock(ctx, "reading muster's clock", func() (timeshift.Reading, error) {
		return timeshift.Read(ctx, m.clockAddr)
	})
	return r.Now, err
}

// Advance moves the process's test clock forward by d: its timers due by the new
// time fire at once. It returns the clock's new time once every timer it fired
// has been taken and armed again (muster's loop has passed at the new time; see
// timeshift.Clock.Advance), waiting for the endpoint while the process starts, or an
// error if ctx ends first, the process exits, or it was started without ClockAddr.
func (m *Muster) Advance(ctx context.Context, d time.Duration) (time.Time, error) {
	if m.clockAddr == "" {
		return time.Time{}, fmt.Errorf("advancing muster's clock (pid %d): expected a muster started with MusterOptions.ClockAddr, found the real clock", m.PID())
	}
	r, err := m.callClock(ctx, "advancing muster's clock by "+d.String(), func() (timeshift.Reading, error) {
		return timeshift.Advance(ctx, m.clockAddr, d)
	})
	return r.Now, err
}

// callClock calls the test clock's endpoint until it answers: while the process
// starts, nothing listens there yet.
func (m *Muster) callClock(ctx context.Context, what string, call func() (timeshift.Reading, error)) (timeshift.Reading, error) {
	for {
		r, err := call()
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return r, fmt.Errorf("%s (pid %d): %w", what, m.PID(), err)
		}
		select {
		case <-m.Done():
			return r, fmt.Errorf("%s: muster (pid %d) exited: %v", what, m.PID(), m.Err())
		case <-ctx.Done():
			return r, fmt.Errorf("%s (pid %d): %w (last: %w)", what, m.PID(), ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeMusterKubeconfig applies deploy/'s RBAC, gets a token of muster's
// ServiceAccount and writes a kubeconfig with it to opts.Dir.
func writeMusterKubeconfig(ctx context.Context, opts MusterOptions) (string, error) {
	if err := ApplyRBAC(ctx, opts.Admin); err != nil {
		return "", err
	}
	token, err := ServiceAccountToken(ctx, opts.Admin)
	if err != nil {
		return "", err
	}
	cluster := &clientcmdapi.Cluster{Server: opts.Server, CertificateAuthorityData: opts.CAData}
	if opts.Server == "" {
		cluster = &clientcmdapi.Cluster{
			Server: opts.Admin.Host, CertificateAuthorityData: opts.Admin.CAData, TLSServerName: opts.Admin.ServerName,
		}
	}
	const name = "muster"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = cluster
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(opts.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("writing muster's kubeconfig: %w", err)
	}
	return path, nil
}

// writeConfiguration writes cfg as YAML to path.
func writeConfiguration(path string, cfg *musterv1alpha1.Configuration) error {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encoding muster's Configuration: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing muster's Configuration: %w", err)
	}
	return nil
}

// rbacMu serializes ApplyRBAC, which several tests may call at once.
var rbacMu sync.Mutex

// ApplyRBAC creates every object of deploy/'s RBAC (deploy.RBAC) that does not exist.
func ApplyRBAC(ctx context.Context, admin *rest.Config) error {
	rbacMu.Lock()
	defer rbacMu.Unlock()
	objs, err := deploy.RBAC()
	if err != nil {
		return err
	}
	c, err := client.New(admin, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	// Namespaces first: the other objects live in them.
	slices.SortStableFunc(objs, func(a, b runtime.Object) int {
		_, nsA := a.(*corev1.Namespace)
		_, nsB := b.(*corev1.Namespace)
		switch {
		case nsA && !nsB:
			return -1
		case nsB && !nsA:
			return 1
		}
		return 0
	})
	for _, o := range objs {
		obj, ok := o.DeepCopyObject().(client.Object)
		if !ok {
			return fmt.Errorf("applying deploy/rbac: expected objects with metadata, found %T", o)
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("applying deploy/rbac: creating %T %s: %w", o, obj.GetName(), err)
		}
	}
	return nil
}

// ServiceAccountToken returns a token of muster's ServiceAccount (deploy.ServiceAccount)
// from the TokenRequest API, as the kubelet mounts one into muster's pod.
func ServiceAccountToken(ctx context.Context, admin *rest.Config) (string, error) {
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return "", fmt.Errorf("creating a client: %w", err)
	}
	sa := deploy.ServiceAccount
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(tokenLifetime / time.Second)),
	}}
	tr, err := kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return tr.Status.Token, nil
}

// RSS returns the process's resident set size in bytes, from /proc.
func (m *Muster) RSS() (uint64, error) {
	return residentBytes(m.PID())
}
