package trace

import (
	"compress/gzip"
	"embed"
	"fmt"
	"io"
)

// Names of the traces shipped with muster, compressed, in data/ (see data/README.md for
// their source and licence).
const (
	// PhillyFile is the Philly job trace as prepared for the Pollux simulator.
	PhillyFile = "philly.csv"
	// PAIMachinesFile is Alibaba PAI's machine list (cluster-trace-gpu-v2020).
	PAIMachinesFile = "pai-machine-spec.csv"
)

//go:embed data/*.csv.gz
var embedded embed.FS

// gzipReadCloser closes both the gzip stream and the file under it.
type gzipReadCloser struct {
	*gzip.Reader
	file io.Closer
}

// Close closes the gzip stream, then the embedded file.
func (g gzipReadCloser) Close() error {
	err := g.Reader.Close()
	if ferr := g.file.Close(); err == nil {
		err = ferr
	}
	return err
}

// OpenEmbedded returns the decompressed contents of the shipped trace name
// (PhillyFile or PAIMachinesFile). The caller closes it.
func OpenEmbedded(name string) (io.ReadCloser, error) {
	f, err := embedded.Open("data/" + name + ".gz")
	if err != nil {
		return nil, fmt.Errorf("embedded trace %q: expected %q or %q: %w", name, PhillyFile, PAIMachinesFile, err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded trace %q: %w", name, err)
	}
	return gzipReadCloser{Reader: zr, file: f}, nil
}

// Philly returns the jobs of the shipped Philly trace.
func Philly() ([]Job, error) {
	r, err := OpenEmbedded(PhillyFile)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return ReadPhilly(r, PhillyFile)
}

// PAIMachines returns the machines of the shipped PAI machine list.
func PAIMachines() ([]Machine, error) {
	r, err := OpenEmbedded(PAIMachinesFile)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return ReadMachines(r, PAIMachinesFile)
}
