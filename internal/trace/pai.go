package trace

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Machine is one line of Alibaba PAI's pai_machine_spec (cluster-trace-gpu-v2020).
type Machine struct {
	// Line is the machine's line number in its file, from 1.
	Line int
	Name string
	// GPUType is the accelerator model ("V100", "T4", ...), or "CPU" for CPU-only machines.
	GPUType string
	// CPU is the number of cores, MemoryGiB the memory in GiB, GPUs the accelerator count.
	CPU       int
	MemoryGiB int
	GPUs      int
}

// LoadMachines reads a pai-machine-spec CSV file; errors name the file by its base name.
func LoadMachines(path string) ([]Machine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open machine spec: %w", err)
	}
	defer f.Close()
	return ReadMachines(f, filepath.Base(path))
}

// ReadMachines reads machine,gpu_type,cap_cpu,cap_mem,cap_gpu lines with no header.
// name labels errors.
func ReadMachines(r io.Reader, name string) ([]Machine, error) {
	var ms []Machine
	err := readLines(r, name, "", func(line int, f []string) error {
		if len(f) != 5 {
			return fmt.Errorf("want 5 fields (machine,gpu_type,cap_cpu,cap_mem,cap_gpu), found %d", len(f))
		}
		m := Machine{Line: line, Name: f[0], GPUType: f[1]}
		if m.Name == "" {
			return fieldError("machine", f[0], fmt.Errorf("want a machine name, found none"))
		}
		if m.GPUType == "" {
			return fieldError("gpu_type", f[1], fmt.Errorf("want a GPU type or CPU, found none"))
		}
		for _, c := range []struct {
			field string
			text  string
			dst   *int
		}{{"cap_cpu", f[2], &m.CPU}, {"cap_mem", f[3], &m.MemoryGiB}, {"cap_gpu", f[4], &m.GPUs}} {
			v, err := strconv.Atoi(c.text)
			if err != nil {
				return fieldError(c.field, c.text, fmt.Errorf("not an integer"))
			}
			if v < 0 {
				return fieldError(c.field, c.text, fmt.Errorf("want at least 0"))
			}
			*c.dst = v
		}
		ms = append(ms, m)
		return nil
	})
	return ms, err
}
