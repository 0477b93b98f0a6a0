package sandboxtest

import (
	"context"
	"os"
	"testing"

	"github.com/muster-sched/muster/internal/sandbox"
)

// StartSandboxProcess runs a sandbox of cluster as its own process (`muster sandbox
// --nodes-only` from MusterBinary), for faults the shared in-process sandbox cannot
// take, such as stopping the API server with SIGSTOP. It returns an Env on it (whose
// Sandbox is nil: the kubelets are the process's) and the process, which is stopped
// when the test ends. Its output goes to a file named in the test log if the test
// fails.
func StartSandboxProcess(t testing.TB, cluster sandbox.Cluster) (*Env, *sandbox.Process) {
	t.Helper()
	logFile, err := os.CreateTemp("", "muster-sandbox-"+fileName(t.Name())+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	bin := MusterBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	p, err := sandbox.StartProcess(ctx, sandbox.ProcessOptions{Binary: bin, Cluster: cluster, Dir: t.TempDir(), Log: logFile})
	if err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(WaitTimeout); err != nil {
			t.Errorf("stopping the sandbox process: %v", err)
		}
		logFile.Close()
		if !t.Failed() {
			_ = os.Remove(logFile.Name())
			return
		}
		t.Logf("the sandbox process (pid %d) logged to %s; its last lines:\n%s", p.PID(), logFile.Name(), tail(logFile.Name(), 20))
	})
	env := &Env{}
	if err := env.connectTo(p.Config()); err != nil {
		t.Fatal(err)
	}
	return env, p
}
