package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
	"github.com/muster-sched/muster/deploy"
	"github.com/muster-sched/muster/internal/sandbox"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// MusterBinary builds ./cmd/muster of this module once per test binary, with
// `go build -o` into a temporary directory, and returns its path: the tests run the
// program users run, as it is now. With MUSTER_RACE=1 in the environment it is built
// with the race detector (`go build -race`), and a test whose muster reports a data
// race fails (see RaceEnv).
func MusterBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { binary, buildErr = buildMuster() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// RemoveMusterBinary removes the directory MusterBinary built muster into, if it did:
// a test binary's TestMain calls it once its tests have run (Run does), so that each run
// does not leave a binary of some 250 MB behind.
func RemoveMusterBinary() error {
	if binary == "" {
		return nil
	}
	return os.RemoveAll(filepath.Dir(binary))
}

// buildMuster builds ./cmd/muster into a new temporary directory.
func buildMuster() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module root (go env GOMOD): %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	dir, err := os.MkdirTemp("", "muster-bin")
	if err != nil {
		return "", fmt.Errorf("creating a directory for the muster binary: %w", err)
	}
	out := filepath.Join(dir, "muster")
	args := []string{"build", "-o", out}
	if raceBuild() {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/muster")...)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("building muster (go build -o %s ./cmd/muster in %s): %w\n%s", out, root, err, msg)
	}
	return out, nil
}

// RaceEnv is the environment variable that, set to 1, builds the tests' muster with
// the race detector.
const RaceEnv = "MUSTER_RACE"

// raceBuild reports whether the tests' muster is built with the race detector.
func raceBuild() bool { return os.Getenv(RaceEnv) == "1" }

// dataRace is how the race detector begins its report of a data race.
var dataRace = regexp.MustCompile(`(?m)^WARNING: DATA RACE$`)

// MusterOptions adjust a muster started by Env.StartMuster.
type MusterOptions struct {
	// Proxy, if set, is where muster connects instead of the API server.
	Proxy *Proxy
	// Configure, if set, edits the Configuration muster is given: deploy/'s, with
	// metrics, health and visibility servers off and the test lease timings
	// (TestLease).
	Configure func(*musterv1alpha1.Configuration)
	// Clock runs muster's scheduling timers on its test clock (see
	// sandbox.MusterOptions.ClockAddr), which Muster.AdvanceClock moves forward; false
	// means the real clock, as deployed.
	Clock bool
}

// TestLease are the lease timings of the tests' musters: a replica killed while
// leading is replaced within a few seconds.
var TestLease = struct{ Duration, RenewDeadline, RetryPeriod time.Duration }{
	3 * time.Second, 2 * time.Second, 200 * time.Millisecond,
}

// Muster is a `muster serve` process started by a test.
type Muster struct {
	*sandbox.Muster
	// Configuration is what the process was given.
	Configuration *musterv1alpha1.Configuration
	// LogPath is the file that receives muster's output.
	LogPath string
}

// StartMuster starts `muster serve` from MusterBinary as deployed (see
// sandbox.StartMuster): deploy/'s Configuration, RBAC and ServiceAccount, over the
// network to the sandbox (or to o.Proxy). Its output goes to a file that is named,
// with its last lines, in the test log if the test fails, and removed otherwise.
// The process is stopped with SIGTERM when the test ends (if it still runs), and
// must exit cleanly then.
func (e *Env) StartMuster(t testing.TB, o MusterOptions) *Muster {
	t.Helper()
	return StartMusterOn(t, e.Config, o)
}

// StartMusterOn is Env.StartMuster for any cluster that admin reaches with full
// access, e.g. a sandbox running as its own process.
func StartMusterOn(t testing.TB, admin *rest.Config, o MusterOptions) *Muster {
	t.Helper()
	bin := MusterBinary(t)
	cfg, err := deploy.ParsedConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	cfg.MetricsAddr, cfg.HealthAddr = musterv1alpha1.DisabledAddr, musterv1alpha1.DisabledAddr
	cfg.Visibility.BindAddress = musterv1alpha1.DisabledAddr
	le := &cfg.LeaderElection
	le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration = TestLease.Duration, TestLease.RenewDeadline, TestLease.RetryPeriod
	if o.Configure != nil {
		o.Configure(cfg)
	}
	logFile, err := os.CreateTemp("", "muster-"+fileName(t.Name())+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := sandbox.MusterOptions{Binary: bin, Admin: admin, Configuration: cfg, Dir: dir, Log: logFile, Verbosity: 2}
	if o.Proxy != nil {
		opts.Server, opts.CAData = o.Proxy.URL, o.Proxy.CAData
	}
	if o.Clock {
		opts.ClockAddr = FreeAddr(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	p, err := sandbox.StartMuster(ctx, opts)
	if err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	m := &Muster{Muster: p, Configuration: cfg, LogPath: logFile.Name()}
	t.Cleanup(func() {
		select {
		case <-p.Done():
		default:
			if err := p.Stop(WaitTimeout); err != nil {
				t.Errorf("stopping muster: %v", err)
			}
		}
		logFile.Close()
		if m.Logged(dataRace) {
			t.Errorf("muster (pid %d) reported a data race: see %s", m.PID(), m.LogPath)
		}
		m.reportLog(t)
	})
	return m
}

// AdvanceClock moves muster's test clock forward by d (the muster must have been
// started with MusterOptions.Clock): its timers due by the new time fire at once, and
// it returns muster's new time once muster's loop has passed at that time. It fails
// the test if that takes more than WaitTimeout.
func (m *Muster) AdvanceClock(t testing.TB, d time.Duration) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	began := time.Now()
	now, err := m.Advance(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("advanced muster's clock by %s to %s; its loop had passed at the new time %s later",
		d, now.UTC().Format(time.RFC3339), time.Since(began).Round(time.Millisecond))
	return now
}

// Now returns the time on muster's clock: its test clock's, or real time.
func (m *Muster) Now(t testing.TB) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	now, err := m.Muster.ClockNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// reportLog names muster's log file and prints its last lines if the test failed,
// and removes it otherwise.
func (m *Muster) reportLog(t testing.TB) {
	if !t.Failed() {
		_ = os.Remove(m.LogPath)
		return
	}
	t.Logf("muster (pid %d) logged to %s; its last lines:\n%s", m.PID(), m.LogPath, tail(m.LogPath, 40))
}

// Logged reports whether muster's log has a line matching re.
func (m *Muster) Logged(re *regexp.Regexp) bool {
	data, err := os.ReadFile(m.LogPath)
	return err == nil && re.Match(data)
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// fileName turns a test name into something a file name can hold.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, s)
}

// Leading reports whether the muster serving metrics on addr holds its Lease
// (controller-runtime's leader_election_master_status is 1).
func Leading(addr string) (bool, error) {
	v, ok, err := sandbox.ScrapeMetric(context.Background(), addr, "leader_election_master_status")
	return ok && v == 1, err
}
