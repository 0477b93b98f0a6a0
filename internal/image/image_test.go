package image

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// maxCompressed is the most the image may weigh to pull, config and layers compressed.
const maxCompressed = 60 << 20

// forbidden are modules the server binary must not link: etcd's server, which the
// sandbox's embedded control plane runs. k8s.io/apiserver is allowed: it is the library
// the visibility API is served with, as every aggregated API server is (metrics-server,
// Kueue's visibility API).
var forbidden = []string{"go.etcd.io/etcd/server/v3"}

// allowedKubernetes are the only packages of k8s.io/kubernetes the server may link:
// kube-scheduler's framework and Filter plugins, which placement hosts, and the API
// helpers and feature gates they import. kube-apiserver, the controllers and the rest of
// k8s.io/kubernetes stay out.
var allowedKubernetes = []string{
	"k8s.io/kubernetes/pkg/scheduler/", "k8s.io/kubernetes/pkg/apis/", "k8s.io/kubernetes/pkg/api/",
	"k8s.io/kubernetes/pkg/features",
}

// TestImage builds muster-scheduler as make image does (less -trimpath, which would
// rebuild every dependency instead of using the build cache), then the image, and
// checks what the issue asks of it: static, non-root, small, no kube-apiserver or etcd.
func TestImage(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "muster-scheduler")
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "github.com/muster-sched/muster/cmd/muster-scheduler")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	checkStatic(t, bin)
	checkModules(t, bin)
	checkKubernetesPackages(t)
	if runtime.GOOS == "linux" {
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "muster-scheduler version ") || !strings.Contains(string(out), "kubernetes v1.37.2") {
			t.Errorf("muster-scheduler version: %v, printed %q; want \"muster-scheduler version ..., kubernetes v1.37.2, ...\"", err, out)
		}
	}

	img, err := Build(Options{Binary: bin, Arch: runtime.GOARCH, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	size, err := CompressedSize(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image: %.1f MB compressed (limit %d MiB)", float64(size)/1e6, maxCompressed>>20)
	if size >= maxCompressed {
		t.Errorf("image is %d bytes compressed, want < %d", size, maxCompressed)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != User || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != BinaryPath {
		t.Errorf("config user %q entrypoint %q, want %q [%s]", cfg.Config.User, cfg.Config.Entrypoint, User, BinaryPath)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one on scratch", len(layers), err)
	}
	checkFiles(t, layers[0].Uncompressed)

	archive := filepath.Join(t.TempDir(), "muster.oci.tar")
	if err := WriteOCIArchive(img, archive, "muster:test"); err != nil {
		t.Fatal(err)
	}
	checkArchive(t, archive, img)
}

// checkStatic fails if bin asks for a dynamic loader or shared libraries.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a PT_INTERP program header: it is dynamically linked")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
}

// checkModules fails if bin links a module of the embedded control plane.
func checkModules(t *testing.T, bin string) {
	t.Helper()
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range bi.Deps {
		for _, bad := range forbidden {
			if m.Path == bad {
				t.Errorf("muster-scheduler links %s %s", m.Path, m.Version)
			}
		}
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" && s.Value != "0" {
			t.Errorf("built with CGO_ENABLED=%s, want 0", s.Value)
		}
	}
}

// checkKubernetesPackages fails when muster-scheduler imports a package of
// k8s.io/kubernetes outside allowedKubernetes.
func checkKubernetesPackages(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "github.com/muster-sched/muster/cmd/muster-scheduler").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	linked := 0
	for _, pkg := range strings.Fields(string(out)) {
		if !strings.HasPrefix(pkg, "k8s.io/kubernetes/") {
			continue
		}
		linked++
		if !slices.ContainsFunc(allowedKubernetes, func(p string) bool { return strings.HasPrefix(pkg, p) }) {
			t.Errorf("muster-scheduler imports %s: only kube-scheduler's framework and plugins may come from k8s.io/kubernetes", pkg)
		}
	}
	t.Logf("muster-scheduler imports %d packages of k8s.io/kubernetes", linked)
}

// checkFiles fails unless the layer holds exactly the binary, passwd and group (and
// their directories), passwd naming user 65532.
func checkFiles(t *testing.T, open func() (io.ReadCloser, error)) {
	t.Helper()
	rc, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var files []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(hdr.Name, "kube-apiserver") || strings.Contains(hdr.Name, "etcd") {
			t.Errorf("layer holds %s", hdr.Name)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		files = append(files, hdr.Name)
		if hdr.Name == "etc/passwd" {
			data, _ := io.ReadAll(tr)
			if !bytes.Contains(data, []byte(":65532:65532:")) {
				t.Errorf("etc/passwd names no user 65532:\n%s", data)
			}
		}
	}
	if got, want := strings.Join(files, " "), "etc/passwd etc/group usr/local/bin/muster-scheduler"; got != want {
		t.Errorf("layer files %q, want %q", got, want)
	}
}

// checkArchive reads the OCI archive back and finds img in it.
func checkArchive(t *testing.T, archive string, img v1.Image) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("the archive is not an OCI layout: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index: %v, %v; want one image", m, err)
	}
	want, _ := img.Digest()
	if m.Manifests[0].Digest != want || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "muster:test" {
		t.Errorf("index names %v %v, want %v muster:test", m.Manifests[0].Digest, m.Manifests[0].Annotations, want)
	}
}
