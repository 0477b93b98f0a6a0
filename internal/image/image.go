// Package image builds muster's server image with no container runtime: one layer on
// an empty (scratch) base holding the static muster-scheduler binary and an /etc/passwd
// that names user 65532, which the image runs as. It writes the image as an OCI
// archive (an OCI image layout in a tar file), which `podman load`, `skopeo copy
// oci-archive:...` and `crane push` read. make image calls it through hack/image.
//
// No CA bundle is added: muster talks only to the API server, whose CA comes from the
// kubeconfig or the ServiceAccount's ca.crt.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where the image puts things, and who it runs as.
const (
	// BinaryPath is the entrypoint's path inside the image.
	BinaryPath = "/usr/local/bin/muster-scheduler"
	// User is the uid:gid the image runs as (distroless's "nonroot").
	User = "65532:65532"
)

// passwd and group name root and the nonroot user, so that tools that look a uid up
// find one; muster itself never does.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// Options say what to build.
type Options struct {
	// Binary is the path of a static linux muster-scheduler binary.
	Binary string
	// Arch is the binary's GOARCH (amd64, arm64).
	Arch string
	// Version labels the image (org.opencontainers.image.version).
	Version string
}

// Build returns the image: scratch, one layer, user 65532, entrypoint muster-scheduler.
func Build(opts Options) (v1.Image, error) {
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	layerTar, err := rootfs(bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", opts.Arch
	cfg.Config.Entrypoint = []string{BinaryPath}
	cfg.Config.Cmd = []string{"serve"}
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "muster-scheduler",
		"org.opencontainers.image.source":  "https://github.com/muster-sched/muster",
		"org.opencontainers.image.version": opts.Version,
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	return img, nil
}

// rootfs returns the layer's uncompressed tar: the binary and /etc/passwd and group,
// every time stamp zero so that a build is reproducible.
func rootfs(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, d := range []string{"etc/", "usr/", "usr/local/", "usr/local/bin/", "home/", "home/nonroot/"} {
		hdr := &tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}
		if d == "home/nonroot/" {
			hdr.Uid, hdr.Gid, hdr.Mode = 65532, 65532, 0o700
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing the layer: %w", err)
		}
	}
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte(passwd)},
		{"etc/group", 0o644, []byte(group)},
		{BinaryPath[1:], 0o755, bin},
	} {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing the layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("writing the layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteOCIArchive writes img to path as an OCI archive: an OCI image layout, tagged
// ref (org.opencontainers.image.ref.name), in a tar file.
func WriteOCIArchive(img v1.Image, path, ref string) error {
	dir, err := os.MkdirTemp("", "muster-image-")
	if err != nil {
		return fmt.Errorf("making a layout directory: %w", err)
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return fmt.Errorf("writing the image into the OCI layout: %w", err)
	}
	return tarDir(dir, path)
}

// tarDir writes the files under dir into a tar file at path.
func tarDir(dir, path string) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	tw := tar.NewWriter(out)
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime = filepath.ToSlash(rel), time.Unix(0, 0)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil || fi.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// CompressedSize is what pulling img transfers: its config and compressed layers.
func CompressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, fmt.Errorf("reading the manifest: %w", err)
	}
	n := m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}
