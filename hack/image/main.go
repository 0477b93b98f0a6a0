// Command image writes muster's server image as an OCI archive with no container
// runtime (see internal/image). make image runs it:
//
//	go run ./hack/image -binary bin/muster-scheduler -out bin/muster-scheduler.oci.tar
//
// The archive is a build output: it belongs in bin/ or /tmp, never in git.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/muster-sched/muster/internal/image"
)

func main() {
	bin := flag.String("binary", "bin/muster-scheduler", "static linux muster-scheduler binary (CGO_ENABLED=0)")
	out := flag.String("out", "bin/muster-scheduler.oci.tar", "OCI archive to write")
	ref := flag.String("ref", "ghcr.io/muster-sched/muster:dev", "reference the archive names the image by")
	arch := flag.String("arch", runtime.GOARCH, "the binary's GOARCH")
	ver := flag.String("version", "dev", "the image's version label")
	flag.Parse()
	if err := run(*bin, *out, *ref, *arch, *ver); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run builds the image and writes the archive, then prints its size.
func run(bin, out, ref, arch, ver string) error {
	img, err := image.Build(image.Options{Binary: bin, Arch: arch, Version: ver})
	if err != nil {
		return err
	}
	if err := image.WriteOCIArchive(img, out, ref); err != nil {
		return err
	}
	size, err := image.CompressedSize(img)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s, %.1f MB compressed\n", out, ref, float64(size)/1e6)
	return nil
}
