package helm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// root is the repository root, relative to this package.
const root = "../.."

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// helm returns the path of the pinned helm, built once per test binary into a
// temporary directory (hack/tools/helm is its own module: helm's dependencies never
// meet muster's).
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		dir, err := os.MkdirTemp("", "muster-helm-")
		if err != nil {
			helmErr = err
			return
		}
		helmBin = filepath.Join(dir, "helm")
		cmd := exec.Command("go", "build", "-o", helmBin, "helm.sh/helm/v4/cmd/helm")
		cmd.Dir = filepath.Join(root, "hack", "tools", "helm")
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = errors.New(string(out))
		}
	})
	if helmErr != nil {
		t.Fatalf("building the pinned helm: %v", helmErr)
	}
	return helmBin
}

// render runs helm template on the chart with the given --set values and returns the
// objects, or helm's error output.
func render(t *testing.T, set ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	args := []string{"template", "muster", filepath.Join(root, "deploy", "helm", "muster"), "--namespace", "muster-system"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New(stderr.String())
	}
	return decode(t, stdout.Bytes())
}

// decode splits a multi-document YAML stream into objects, skipping empty documents.
func decode(t *testing.T, data []byte) ([]*unstructured.Unstructured, error) {
	t.Helper()
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := d.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// key names an object as kind/namespace/name.
func key(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// byKey indexes objects by key.
func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[key(o)] = o
	}
	return m
}

// mustRender is render that fails the test on an error.
func mustRender(t *testing.T, set ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := render(t, set...)
	if err != nil {
		t.Fatalf("helm template --set %s: %v", strings.Join(set, ","), err)
	}
	return byKey(objs)
}

func TestLint(t *testing.T) {
	out, err := exec.Command(helm(t), "lint", "--strict", filepath.Join(root, "deploy", "helm", "muster")).CombinedOutput()
	if err != nil {
		t.Errorf("helm lint --strict: %v\n%s", err, out)
	}
}
