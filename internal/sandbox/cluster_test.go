package sandbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// paiTrace is the PAI machine trace: empty means the copy shipped with muster.
const paiTrace = ""

func TestParseClusterRejectsMalformedFiles(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"no pools", `pools: []`, "pools: expected at least one node pool, found none"},
		{"unknown field", `pools: [{name: a, count: 1, cpu: "1", memory: 1Gi, gpu: 1}]`, `unknown field "gpu"`},
		{"bad name", `pools: [{name: A_B, count: 1, cpu: "1", memory: 1Gi}]`, `pools[0].name: expected a DNS-1123 label, found "A_B"`},
		{"zero count", `pools: [{name: a, count: 0, cpu: "1", memory: 1Gi}]`, "pools[0].count: expected at least 1, found 0"},
		{"bad cpu", `pools: [{name: a, count: 1, cpu: lots, memory: 1Gi}]`, `pools[0].cpu: expected a quantity such as "64" or "512Gi", found "lots"`},
		{"zero memory", `pools: [{name: a, count: 1, cpu: "1", memory: "0"}]`, `pools[0].memory: expected a quantity greater than zero, found "0"`},
		{"negative gpus", `pools: [{name: a, count: 1, cpu: "1", memory: 1Gi, gpus: -1}]`, "pools[0].gpus: expected a non-negative number, found -1"},
		{"bad taint", `pools: [{name: a, count: 1, cpu: "1", memory: 1Gi, taints: [{key: gpu, effect: Sometimes}]}]`,
			`pools[0].taints[0].effect: expected NoSchedule, PreferNoSchedule or NoExecute, found "Sometimes"`},
		{"duplicate", `pools: [{name: a, count: 1, cpu: "1", memory: 1Gi}, {name: a, count: 1, cpu: "1", memory: 1Gi}]`,
			`pools[1].name: expected a unique pool name, found "a", also used by pools[0]`},
		{"bad label", `pools: [{name: a, count: 1, cpu: "1", memory: 1Gi, labels: {"zone": "not ok"}}]`, `pools[0].labels[zone]: expected a label value, found "not ok"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sandbox.ParseCluster([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("expected an error containing %q, found %v", tc.wantErr, err)
			}
		})
	}
}

func TestClusterNodes(t *testing.T) {
	c, err := sandbox.ParseCluster([]byte(`
pools:
- name: a100
  count: 4
  cpu: "64"
  memory: 512Gi
  gpus: 8
  gpuProduct: NVIDIA-A100-SXM4-80GB
  racks: 2
  labels: {team: ml}
  taints: [{key: gpu, value: a100, effect: NoSchedule}]
`))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes {
		gpus := n.Status.Allocatable[sandbox.ResourceGPU]
		got = append(got, n.Name+" "+n.Labels[sandbox.LabelRack]+" "+n.Labels[sandbox.LabelGPUProduct]+" "+
			n.Labels["team"]+" "+gpus.String()+" "+string(n.Spec.Taints[0].Effect))
	}
	want := []string{
		"a100-0 a100-rack-0 NVIDIA-A100-SXM4-80GB ml 8 NoSchedule",
		"a100-1 a100-rack-0 NVIDIA-A100-SXM4-80GB ml 8 NoSchedule",
		"a100-2 a100-rack-1 NVIDIA-A100-SXM4-80GB ml 8 NoSchedule",
		"a100-3 a100-rack-1 NVIDIA-A100-SXM4-80GB ml 8 NoSchedule",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		preset    string
		wantNodes int
		wantGPUs  int64
		wantZones int
	}{
		{sandbox.PresetSeed, 8, 8, 2},
		{sandbox.PresetDGX, 16, 128, 2},
		// 1% of each of the 7 PAI shapes, at least one node each: 1+3+8+5+1+1+1.
		{sandbox.PresetPAI, 20, 3*8 + 8*2 + 5*2 + 8 + 8 + 8, 0},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			c, err := sandbox.Preset(tc.preset, sandbox.PresetOptions{PAITrace: paiTrace, PAIScale: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := c.Nodes()
			if err != nil {
				t.Fatal(err)
			}
			var gpus int64
			zones := map[string]int{}
			for _, n := range nodes {
				q := n.Status.Allocatable[sandbox.ResourceGPU]
				gpus += q.Value()
				if z := n.Labels[v1.LabelTopologyZone]; z != "" {
					zones[z]++
				}
			}
			if len(nodes) != tc.wantNodes || gpus != tc.wantGPUs || len(zones) != tc.wantZones {
				t.Errorf("expected %d nodes with %d GPUs in %d zones, found %d with %d in %v", tc.wantNodes, tc.wantGPUs, tc.wantZones, len(nodes), gpus, zones)
			}
		})
	}
}

func TestPresetErrors(t *testing.T) {
	for _, tc := range []struct {
		name, preset, trace string
		scale               float64
		wantErr             string
	}{
		{"unknown preset", "huge", paiTrace, 1, `preset: expected one of seed, dgx, pai, dra, found "huge"`},
		{"zero scale", sandbox.PresetPAI, paiTrace, 0, "pai scale: expected a number greater than zero, found 0"},
		{"missing trace", sandbox.PresetPAI, "testdata/nope.csv", 1, "no such file"},
		{"bad trace", sandbox.PresetPAI, "testdata/bad-pai.csv", 1, `line 2 column cap_mem: expected a non-negative integer, found "lots"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sandbox.Preset(tc.preset, sandbox.PresetOptions{PAITrace: tc.trace, PAIScale: tc.scale})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("expected an error containing %q, found %v", tc.wantErr, err)
			}
		})
	}
}

func TestPresetNodesInTheAPIServer(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Shared(t)
	for _, preset := range []string{sandbox.PresetDGX, sandbox.PresetPAI} {
		c, err := sandbox.Preset(preset, sandbox.PresetOptions{PAITrace: paiTrace, PAIScale: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]v1.ResourceList{}
		nodes, err := c.Nodes()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			want[n.Name] = n.Status.Allocatable
		}
		for _, p := range c.Pools {
			env.CreateNodes(t, p)
		}
		for name, alloc := range want {
			n, err := env.Kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", preset, err)
			}
			for res, q := range alloc {
				if got := n.Status.Allocatable[res]; got.Cmp(q) != 0 {
					t.Errorf("%s node %s: expected allocatable %s %s, found %s", preset, name, res, q.String(), got.String())
				}
			}
		}
	}
}
