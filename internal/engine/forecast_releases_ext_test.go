package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
)

// TestForecastKeepsTheNodesReleases plays random worlds, as FuzzEngine does, and checks
// before every Step that the releases the forecast keeps of each node, read again only
// when its pods or the groups of its members changed, are those read afresh: groups
// starting, running, evicted, finished, removed.
func TestForecastKeepsTheNodesReleases(t *testing.T) {
	for seed := range 300 {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x72656c73))
		data := make([]byte, 600)
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		w := newFuzzWorld(t, data)
		for i := range 1 + w.next()%5 {
			name := fmt.Sprintf("n-%d", i)
			w.nodes[name] = gt.Node(name).GPU(int64(w.next()%5)).CPU("8").Label("zone", fmt.Sprintf("z%d", i%2)).Obj()
			w.e.SetNode(w.nodes[name])
		}
		for steps := 0; len(w.data) > 0 && steps < 200; steps++ {
			kind := w.next() % 14
			if kind == 9 {
				w.flush()
				if diff := engine.ForecastReleasesAgree(w.e); diff != "" {
					t.Fatalf("seed %d, step %d: %s", seed, steps, diff)
				}
			}
			w.event(kind)
		}
	}
}
