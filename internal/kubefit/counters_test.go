package kubefit

import (
	"testing"

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

// TestMostTogetherBoundsWhatFits: over small pools of two counter sets of two counters
// each, mostTogether never counts fewer devices than fit together, and counts exactly
// as many when the devices consume alike (the partitions of one profile).
func TestMostTogetherBoundsWhatFits(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := cluster.PoolKey{Driver: "mig.example.com", Pool: "n0"}
		counters := []counter{{pool, "gpu-0", "slices"}, {pool, "gpu-0", "memory"}, {pool, "gpu-1", "slices"}, {pool, "gpu-1", "memory"}}
		left := map[counter]int64{}
		for _, c := range counters {
			left[c] = rapid.Int64Range(0, 8).Draw(t, "left")
		}
		alike := rapid.Bool().Draw(t, "alike")
		var devices []consumption
		for i := range rapid.IntRange(0, 8).Draw(t, "devices") {
			if alike && i > 0 {
				devices = append(devices, devices[0])
				continue
			}
			var d consumption
			for _, c := range counters {
				if v := rapid.Int64Range(0, 4).Draw(t, "consumes"); v > 0 {
					if d == nil {
						d = consumption{}
					}
					d[c] = v
				}
			}
			devices = append(devices, d)
		}
		got, want := mostTogether(devices, left), bruteMost(devices, left)
		if got < want || alike && got != want {
			t.Fatalf("mostTogether(%v, %v) = %d; %d fit together (alike: %v)", devices, left, got, want, alike)
		}
	})
}
