package kubefit

import (
	"slices"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
)

// bruteMost is the most of devices that can be allocated together within left, by
// trying every subset.
func bruteMost(devices []consumption, left map[counter]int64) int64 {
	var best int64
	for set := 0; set < 1<<len(devices); set++ {
		used, n := map[counter]int64{}, int64(0)
		fits := true
		for i, d := range devices {
			if set&(1<<i) == 0 {
				continue
			}
			n++
			for c, v := range d {
				if used[c] += v; used[c] > left[c] {
					fits = false
				}
			}
		}
		if fits {
			best = max(best, n)
		}
	}
	return best
}

// TestMostTogetherBoundsWhatFits: over small pools of two counter sets (two GPUs) of
// two counters each, mostTogether never counts fewer devices than fit together, and
// counts exactly as many when the devices consume alike (the partitions of one
// profile), or consume alike within each set they consume from alone (one profile's
// partitions of two GPUs, which share no counter).
func TestMostTogetherBoundsWhatFits(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := cluster.PoolKey{Driver: "mig.example.com", Pool: "n0"}
		sets := [][]counter{{{pool, "gpu-0", "slices"}, {pool, "gpu-0", "memory"}}, {{pool, "gpu-1", "slices"}, {pool, "gpu-1", "memory"}}}
		left := map[counter]int64{}
		for _, set := range sets {
			for _, c := range set {
				left[c] = rapid.Int64Range(0, 8).Draw(t, "left")
			}
		}
		draw := func(counters []counter) consumption {
			var d consumption
			for _, c := range counters {
				if v := rapid.Int64Range(0, 4).Draw(t, "consumes"); v > 0 {
					if d == nil {
						d = consumption{}
					}
					d[c] = v
				}
			}
			return d
		}
		const (
			anyHow = iota
			alike
			alikePerSet
		)
		mode := rapid.IntRange(anyHow, alikePerSet).Draw(t, "mode")
		perSet := []consumption{draw(sets[0]), draw(sets[1])}
		var devices []consumption
		for i := range rapid.IntRange(0, 8).Draw(t, "devices") {
			switch {
			case mode == alike && i > 0:
				devices = append(devices, devices[0])
			case mode == alikePerSet:
				devices = append(devices, perSet[rapid.IntRange(0, 1).Draw(t, "set")])
			default:
				devices = append(devices, draw(append(slices.Clone(sets[0]), sets[1]...)))
			}
		}
		got, want := mostTogether(devices, left), bruteMost(devices, left)
		if got < want || mode != anyHow && got != want {
			t.Fatalf("mostTogether(%v, %v) = %d; %d fit together (mode %d)", devices, left, got, want, mode)
		}
	})
}

// TestFractionalCounters: counters are quantities; two devices that each consume half of
// a counter of one fit together.
func TestFractionalCounters(t *testing.T) {
	s := &resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: "d", Pool: resourcev1.ResourcePool{Name: "p"},
		SharedCounters: []resourcev1.CounterSet{{Name: "set", Counters: map[string]resourcev1.Counter{"c": {Value: resource.MustParse("1")}}}}}}
	half := resourcev1.Device{Name: "half", ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: "set",
		Counters: map[string]resourcev1.Counter{"c": {Value: resource.MustParse("500m")}}}}}
	objs := &cluster.Objects{Slices: map[string]*resourcev1.ResourceSlice{"s": s}}
	left := sharedCounters(objs, cluster.NewestPools(objs.Slices))
	d := consumptionOf(s, &half)
	if got := mostTogether([]consumption{d, d, d}, left); got != 2 {
		t.Errorf("devices of 500m of a counter of 1 that fit together: %d, want 2", got)
	}
}
