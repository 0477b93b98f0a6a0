package docs

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// root is the repository root, relative to this package.
const root = "../.."

// command is one shell line of a fenced sh block.
type command struct {
	file string
	line int
	text string
}

// String names the command and where it is written.
func (c command) String() string { return c.file + ":" + strconv.Itoa(c.line) + ": " + c.text }

// commands returns the lines of the sh blocks of README.md and docs/*.md, without
// comments and continuation lines joined.
func commands(t *testing.T) []command {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []command
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		out = append(out, shLines(rel, data)...)
	}
	return out
}

// shLines extracts the commands of the ```sh blocks of one Markdown file.
func shLines(name string, data []byte) []command {
	var out []command
	in := false
	var cur *command
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			in = !in && (line == "```sh" || line == "```bash")
			continue
		case !in:
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if cur != nil {
			cur.text += " " + strings.TrimSuffix(line, "\\")
		} else if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, command{file: name, line: n, text: strings.TrimSuffix(line, "\\")})
			cur = &out[len(out)-1]
		}
		if !strings.HasSuffix(line, "\\") {
			cur = nil
		}
	}
	for i := range out {
		out[i].text = strings.Join(strings.Fields(out[i].text), " ")
	}
	return out
}

// sandboxKubectl is how the docs address the sandbox.
const sandboxKubectl = "kubectl --kubeconfig ./muster-sandbox.kubeconfig "

// skips say why a documented command is not run, by its first words. A command that
// matches neither a skip nor a runnable form fails the test: teach it here.
var skips = []struct{ prefix, why string }{
	{"kubectl -n muster-system", "needs muster installed on a real cluster"},
	{"kubectl apply --server-side -k", "installs muster on a real cluster (test/helm checks the kustomization's objects)"},
	{"kubectl muster", "needs the plugin on the PATH and a cluster with the named job"},
	{"kubectl get flowschema", "needs muster installed on a real cluster (test/helm dry-runs the FlowSchemas)"},
	{"kustomize ", "edits deploy/ in place"},
	{"cd ", "changes directory for the commands after it"},
	{"helm install kuberay-operator", "installs KubeRay's operator from its chart repository, on a real cluster"},
	{"helm ", "installs on a real cluster (test/helm renders and dry-runs the chart)"},
	{"skopeo ", "pushes to a registry"},
	{"podman ", "needs a container runtime"},
	{"docker ", "needs a container runtime"},
	{"make image", "internal/image builds the image"},
	{"make test", "is the test suite itself"},
	{"make ", "a build target, run by CI"},
	{"go build", "builds a binary; this test builds muster itself"},
	{"go test", "runs tests; CI runs them"},
	{"MUSTER_RACE=1 go test", "runs the e2e suites with muster built with the race detector, for most of an hour"},
	{"go run ./cmd/muster sandbox", "runs until interrupted"},
	{"go run ./cmd/muster bench", "runs for minutes; the bench is measured in docs/benchmarks.md"},
	{"time /tmp/muster", "replays or benches for minutes; figures in docs/benchmarks.md"},
	{"/tmp/muster", "replays or benches for minutes; figures in docs/benchmarks.md"},
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds muster and kubectl (Kubernetes v1.37.2, from the main module) once.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "muster-docs-")
		if buildErr != nil {
			return
		}
		for _, pkg := range []string{"github.com/muster-sched/muster/cmd/muster", "k8s.io/kubernetes/cmd/kubectl"} {
			out, err := exec.Command("go", "build", "-o", binDir+"/", pkg).CombinedOutput()
			if err != nil {
				buildErr = &buildError{pkg, string(out)}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// buildError is a failed go build.
type buildError struct{ pkg, out string }

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.out }

// workdir returns a directory laid out as a clone is, as far as the commands look:
// examples/ and the sandbox's kubeconfig at ./muster-sandbox.kubeconfig.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	abs, err := filepath.Abs(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	if err := sandboxtest.Shared(t).Sandbox.WriteKubeconfig(filepath.Join(dir, "muster-sandbox.kubeconfig")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs a shell line with the built muster and kubectl first on the PATH.
func run(t *testing.T, dir, line string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binaries(t)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDocumentedCommands runs every documented command it can, as written.
func TestDocumentedCommands(t *testing.T) {
	dir := workdir(t)
	var ran, skipped int
	for _, c := range commands(t) {
		line, runnable := runnableForm(c.text)
		if !runnable {
			why := skipReason(c.text)
			if why == "" {
				t.Errorf("%s: neither run nor skipped; teach test/docs why", c)
				continue
			}
			t.Logf("skipped %s: %s", c, why)
			skipped++
			continue
		}
		out, err := run(t, dir, line)
		if err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
		ran++
	}
	t.Logf("%d documented commands run, %d skipped with a reason", ran, skipped)
	if ran == 0 {
		t.Error("no documented command ran")
	}
}

// runnableForm returns the shell line to run for a command, and whether it is run:
// kubectl against the sandbox's kubeconfig, and the muster commands that end by
// themselves (demo, version, sim with a small window is not documented), with go run
// ./cmd/muster meaning the built muster.
func runnableForm(text string) (string, bool) {
	switch {
	case strings.HasPrefix(text, sandboxKubectl):
		return text, true
	case strings.HasPrefix(text, "go run ./cmd/muster demo"), strings.HasPrefix(text, "go run ./cmd/muster version"):
		return "muster" + strings.TrimPrefix(text, "go run ./cmd/muster"), true
	case strings.HasPrefix(text, "muster version"), strings.HasPrefix(text, "muster-scheduler version"):
		return strings.Replace(text, "muster-scheduler", "muster", 1), true
	}
	return "", false
}

// skipReason returns why a command is not run, or "" when no rule says.
func skipReason(text string) string {
	if text == "go run ./cmd/muster" {
		return "starts the sandbox, which runs until interrupted"
	}
	for _, s := range skips {
		if strings.HasPrefix(text, s.prefix) {
			return s.why
		}
	}
	return ""
}

// TestExamplesApply applies every folder of examples/ but operators/ with kubectl
// apply -R -f, as the README says each applies to the sandbox.
func TestExamplesApply(t *testing.T) {
	dir := workdir(t)
	entries, err := os.ReadDir(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "operators" {
			continue
		}
		line := sandboxKubectl + "apply -R -f examples/" + e.Name()
		if out, err := run(t, dir, line); err != nil {
			t.Errorf("%s: %v\n%s", line, err, out)
		}
		n++
	}
	t.Logf("%d example folders applied", n)
}
