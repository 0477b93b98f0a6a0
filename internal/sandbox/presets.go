package sandbox

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/muster-sched/muster/internal/trace"
)

// Preset names.
const (
	// PresetSeed is 8 nodes with one GPU each, in 2 zones: the two-jobs example of the
	// design.
	PresetSeed = "seed"
	// PresetDGX is 16 DGX-like nodes with 8 GPUs each, in 4 racks of 2 zones.
	PresetDGX = "dgx"
	// PresetPAI is the machine mix of Alibaba PAI (cluster-trace-gpu-v2020), scaled.
	PresetPAI = "pai"
	// PresetDRA is 16 nodes with 8 GPUs each exposed only as DRA devices (driver
	// gpu.nvidia.com, no nvidia.com/gpu), in 2 NVLink domains of 8 nodes, clique-a
	// and clique-b (see DRACluster; PresetOptions scale it).
	PresetDRA = "dra"
)

// Presets lists the preset names Preset accepts.
func Presets() []string { return []string{PresetSeed, PresetDGX, PresetPAI, PresetDRA} }

// Defaults of PresetDRA.
const (
	DefaultDRANodes   = 16
	DefaultDRAGPUs    = 8
	DefaultDRACliques = 2
)

// PresetOptions are the inputs some presets need.
type PresetOptions struct {
	// PAITrace is the path of pai-machine-spec.csv, for PresetPAI; empty means the copy
	// shipped with muster (internal/trace).
	PAITrace string
	// PAIScale multiplies the number of machines of each shape, for PresetPAI; each
	// shape keeps at least one node. 1 is the full 1,896 machines.
	PAIScale float64
	// DRANodes, DRAGPUs and DRACliques are PresetDRA's node count, DRA GPUs per node
	// and number of NVLink domains; 0 means DefaultDRANodes, DefaultDRAGPUs and
	// DefaultDRACliques.
	DRANodes, DRAGPUs, DRACliques int
}

// Preset returns the named preset cluster.
func Preset(name string, opts PresetOptions) (Cluster, error) {
	switch name {
	case PresetSeed:
		return Cluster{Pools: []NodePool{{
			Name: "gpu", Count: 8, CPU: "16", Memory: "64Gi", GPUs: 1, GPUProduct: "NVIDIA-A100-SXM4-40GB", Zones: 2,
		}}}, nil
	case PresetDGX:
		return Cluster{Pools: []NodePool{{
			Name: "dgx", Count: 16, CPU: "128", Memory: "1Ti", GPUs: 8, GPUProduct: "NVIDIA-H100-80GB-HBM3", Racks: 4, Zones: 2,
		}}}, nil
	case PresetPAI:
		return PAICluster(opts.PAITrace, opts.PAIScale)
	case PresetDRA:
		return DRACluster(cmp.Or(opts.DRANodes, DefaultDRANodes), cmp.Or(opts.DRAGPUs, DefaultDRAGPUs),
			cmp.Or(opts.DRACliques, DefaultDRACliques))
	}
	return Cluster{}, fmt.Errorf("preset: expected one of %s, found %q", strings.Join(Presets(), ", "), name)
}

// DRACluster is nodes nodes with gpus DRA GPUs each (no nvidia.com/gpu), 128 CPUs and
// 1Ti of memory, in cliques NVLink domains of contiguous nodes, as even as they
// divide: one pool per domain, named dra-<id> after the domain's id clique-<id>,
// where the ids are a, b, …, z, aa, ab, … (so the nodes of PresetDRA are dra-a-0 …
// dra-a-7 in clique-a and dra-b-0 … dra-b-7 in clique-b).
func DRACluster(nodes, gpus, cliques int) (Cluster, error) {
	switch {
	case nodes < 1:
		return Cluster{}, fmt.Errorf("dra nodes: expected at least 1, found %d", nodes)
	case gpus < 1:
		return Cluster{}, fmt.Errorf("dra gpus: expected at least 1 GPU per node, found %d", gpus)
	case cliques < 1 || cliques > nodes:
		return Cluster{}, fmt.Errorf("dra cliques: expected from 1 to the node count %d, found %d", nodes, cliques)
	}
	var c Cluster
	for i := range cliques {
		id := cliqueSuffix(i)
		c.Pools = append(c.Pools, NodePool{
			Name: "dra-" + id, Count: nodes*(i+1)/cliques - nodes*i/cliques, CPU: "128", Memory: "1Ti",
			DRAGPUs: gpus, Clique: "clique-" + id,
		})
	}
	if err := c.Validate(); err != nil {
		return Cluster{}, fmt.Errorf("dra cluster: %w", err)
	}
	return c, nil
}

// cliqueSuffix is the i-th (from 0) of a, b, …, z, aa, ab, …
func cliqueSuffix(i int) string {
	s := ""
	for i++; i > 0; i = (i - 1) / 26 {
		s = string(rune('a'+(i-1)%26)) + s
	}
	return s
}

// paiShape is one machine shape of the PAI trace.
type paiShape struct {
	gpuType string
	cpu     int
	memGiB  int
	gpus    int
}

// openPAITrace opens the machine list at path, or the shipped copy when path is empty.
func openPAITrace(path string) (io.ReadCloser, error) {
	if path == "" {
		return trace.OpenEmbedded(trace.PAIMachinesFile)
	}
	return os.Open(path)
}

// orEmbedded names the trace file path in messages, the shipped copy when it is empty.
func orEmbedded(path string) string {
	if path == "" {
		return trace.PAIMachinesFile + " (shipped with muster)"
	}
	return path
}

// PAICluster builds a cluster from the PAI machine trace at path (header-less
// columns machine,gpu_type,cap_cpu,cap_mem,cap_gpu; memory in GiB): one pool per
// machine shape, named after it, with round(count × scale) nodes (at least one).
func PAICluster(path string, scale float64) (Cluster, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return Cluster{}, fmt.Errorf("pai scale: expected a number greater than zero, found %v", scale)
	}
	f, err := openPAITrace(path)
	if err != nil {
		return Cluster{}, fmt.Errorf("pai trace: %w", err)
	}
	defer f.Close()
	counts, err := readPAIShapes(f)
	if err != nil {
		return Cluster{}, fmt.Errorf("pai trace %s: %w", orEmbedded(path), err)
	}
	shapes := make([]paiShape, 0, len(counts))
	for s := range counts {
		shapes = append(shapes, s)
	}
	sort.Slice(shapes, func(i, j int) bool { return shapes[i].name() < shapes[j].name() })
	var c Cluster
	for _, s := range shapes {
		n := max(1, int(math.Round(float64(counts[s])*scale)))
		pool := NodePool{
			Name: s.name(), Count: n, CPU: strconv.Itoa(s.cpu), Memory: strconv.Itoa(s.memGiB) + "Gi", GPUs: s.gpus,
		}
		if s.gpus > 0 {
			pool.GPUProduct = s.gpuType
		}
		c.Pools = append(c.Pools, pool)
	}
	if err := c.Validate(); err != nil {
		return Cluster{}, fmt.Errorf("pai trace %s: %w", path, err)
	}
	return c, nil
}

// name is the pool name of the shape, e.g. "pai-v100m32-96c-384g-8gpu".
func (s paiShape) name() string {
	return fmt.Sprintf("pai-%s-%dc-%dg-%dgpu", strings.ToLower(s.gpuType), s.cpu, s.memGiB, s.gpus)
}

// readPAIShapes counts the machines of each shape in the trace.
func readPAIShapes(r io.Reader) (map[paiShape]int, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 5
	counts := map[paiShape]int{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		s := paiShape{gpuType: rec[1]}
		for i, dst := range []*int{&s.cpu, &s.memGiB, &s.gpus} {
			col := []string{"cap_cpu", "cap_mem", "cap_gpu"}[i]
			v, err := strconv.Atoi(rec[i+2])
			if err != nil || v < 0 {
				return nil, fmt.Errorf("line %d column %s: expected a non-negative integer, found %q", line, col, rec[i+2])
			}
			*dst = v
		}
		counts[s]++
	}
	if len(counts) == 0 {
		return nil, errors.New("expected at least one machine, found none")
	}
	return counts, nil
}
