package sandbox

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// serverTB satisfies the small testing.TB-like interface that
// kube-apiserver's StartTestServer takes, for use outside a test. It logs to a
// writer, turns Fatal into a panic that Start recovers, and runs cleanups at Stop.
type serverTB struct {
	log io.Writer

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	errs     []string
}

// fatal is the panic value of serverTB.FailNow, recovered by Start.
type fatal struct{ msg string }

// The methods below implement k8s.io/kubernetes/test/utils/ktesting.TB with the
// meaning testing.T gives them, except that Fatal panics with a fatal value (there
// is no test goroutine to end), Skip is fatal, and Chdir is refused (it would change
// the directory of the whole program).

func (t *serverTB) Attr(key, value string) {}
func (t *serverTB) Chdir(dir string)       { t.Fatalf("sandbox: Chdir(%q) is not supported", dir) }
func (t *serverTB) Helper()                {}
func (t *serverTB) Name() string           { return "muster-sandbox" }
func (t *serverTB) Skipped() bool          { return false }

func (t *serverTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// runCleanups calls the registered cleanups, last registered first.
func (t *serverTB) runCleanups() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (t *serverTB) Log(args ...any) { fmt.Fprintln(t.log, args...) }
func (t *serverTB) Logf(format string, args ...any) {
	fmt.Fprintf(t.log, format+"\n", args...)
}

func (t *serverTB) Error(args ...any) { t.record(fmt.Sprint(args...)) }
func (t *serverTB) Errorf(format string, args ...any) {
	t.record(fmt.Sprintf(format, args...))
}

// record notes an error reported by the control plane and logs it.
func (t *serverTB) record(msg string) {
	t.mu.Lock()
	t.failed = true
	t.errs = append(t.errs, msg)
	t.mu.Unlock()
	fmt.Fprintln(t.log, "error:", msg)
}

// errors returns the errors reported so far.
func (t *serverTB) errors() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.errs...)
}

func (t *serverTB) Fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}

func (t *serverTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *serverTB) FailNow() {
	t.Fail()
	panic(fatal{msg: "control plane failed"})
}

func (t *serverTB) Fatal(args ...any) {
	t.record(fmt.Sprint(args...))
	panic(fatal{msg: fmt.Sprint(args...)})
}

func (t *serverTB) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.record(msg)
	panic(fatal{msg: msg})
}

func (t *serverTB) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	if err := os.Setenv(key, value); err != nil {
		t.Fatalf("setting %s: %v", key, err)
	}
	t.Cleanup(func() {
		if had {
			_ = os.Setenv(key, old)
		} else {
			_ = os.Unsetenv(key)
		}
	})
}

func (t *serverTB) Skip(args ...any)                 { t.Fatal(append([]any{"sandbox: skip: "}, args...)...) }
func (t *serverTB) Skipf(format string, args ...any) { t.Fatalf("sandbox: skip: "+format, args...) }
func (t *serverTB) SkipNow()                         { t.Fatal("sandbox: skip") }

func (t *serverTB) TempDir() string {
	dir, err := os.MkdirTemp("", "muster-sandbox")
	if err != nil {
		t.Fatalf("creating temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
