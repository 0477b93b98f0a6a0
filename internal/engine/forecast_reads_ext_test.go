package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/muster-sched/muster/internal/engine"
	gt "github.com/muster-sched/muster/internal/gangtest"
)

// TestForecastKeepsWhatItReadOfTheNodes plays random worlds, as FuzzEngine does, and
// checks before every Step that the members the forecast reads from what it kept of
// each node (read again only when the node's generation moves) are those a walk over
// every pod finds: pods bound, finished, deleted, moved between groups, groups removed.
func TestForecastKeepsWhatItReadOfTheNodes(t *testing.T) {
	playForecastWorlds(t, 0x666f7265, engine.ForecastReadsAgree)
}

// playForecastWorlds plays 300 random worlds, as FuzzEngine does, seeded with salt, and
// fails when agree, called before every Step, says how the engine's kept forecast inputs
// differ from fresh ones.
func playForecastWorlds(t *testing.T, salt uint64, agree func(*engine.Engine) string) {
	t.Helper()
	for seed := range 300 {
		rng := rand.New(rand.NewPCG(uint64(seed), salt))
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
				if diff := agree(w.e); diff != "" {
					t.Fatalf("seed %d, step %d: %s", seed, steps, diff)
				}
			}
			w.event(kind)
		}
	}
}
