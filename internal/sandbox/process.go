package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// ProcessOptions configures a `muster sandbox --nodes-only` process started by
// StartProcess.
type ProcessOptions struct {
	// Binary is the muster executable to run.
	Binary string
	// Cluster is the simulated cluster, written to a cluster file.
	Cluster Cluster
	// Dir receives the cluster file and the kubeconfig; it must exist.
	Dir string
	// Log receives the process's standard output and error; nil discards them.
	Log io.Writer
}

// Process is a sandbox running as its own process, without a scheduler: etcd,
// kube-apiserver, the controllers and the simulated kubelets of its cluster, which
// all stop together when it is sent SIGSTOP, as a paused or frozen API server host
// would.
type Process struct {
	*child
	// config reaches the API server with full access.
	config *rest.Config
}

// StartProcess starts `muster sandbox --nodes-only` with opts.Cluster and waits
// until its kubeconfig is written (the API server is ready then) or ctx is done.
// The process is killed if this process dies.
func StartProcess(ctx context.Context, opts ProcessOptions) (*Process, error) {
	if opts.Binary == "" || opts.Dir == "" {
		return nil, fmt.Errorf("starting a sandbox process: expected Binary and Dir set, found %q, %q", opts.Binary, opts.Dir)
	}
	data, err := yaml.Marshal(opts.Cluster)
	if err != nil {
		return nil, fmt.Errorf("encoding the cluster file: %w", err)
	}
	clusterFile := filepath.Join(opts.Dir, "cluster.yaml")
	if err := os.WriteFile(clusterFile, data, 0o600); err != nil {
		return nil, fmt.Errorf("writing the cluster file: %w", err)
	}
	kubeconfig := filepath.Join(opts.Dir, "sandbox.kubeconfig")
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	cmd := exec.Command(opts.Binary, "sandbox", "--nodes-only", "--cluster="+clusterFile, "--kubeconfig-out="+kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	c, err := startChild("the sandbox process", cmd)
	if err != nil {
		return nil, err
	}
	p := &Process{child: c}
	for {
		if cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig); err == nil {
			p.config = cfg
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("sandbox process (pid %d) exited before writing its kubeconfig: %v", p.PID(), p.err)
		case <-ctx.Done():
			_ = p.Kill()
			return nil, fmt.Errorf("sandbox process (pid %d): expected its kubeconfig at %s, found none: %w", p.PID(), kubeconfig, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Config returns a copy of the configuration that reaches the API server with full
// access.
func (p *Process) Config() *rest.Config { return rest.CopyConfig(p.config) }

// Pause stops the process with SIGSTOP: the API server accepts connections (the
// kernel does) and answers nothing until Resume.
func (p *Process) Pause() error { return p.Signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (p *Process) Resume() error { return p.Signal(syscall.SIGCONT) }

// Stop continues the process if it is paused, then stops it as child.Stop does.
func (p *Process) Stop(timeout time.Duration) error {
	if err := p.Resume(); err != nil {
		return err
	}
	return p.child.Stop(timeout)
}
