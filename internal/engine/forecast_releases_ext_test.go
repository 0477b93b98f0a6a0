package engine_test

import (
	"testing"

	"github.com/muster-sched/muster/internal/engine"
)

// TestForecastKeepsTheNodesReleases plays random worlds, as FuzzEngine does, and checks
// before every Step that the releases the forecast keeps of each node, read again only
// when its pods or the groups of its members changed, are those read afresh: groups
// starting, running, evicted, finished, removed.
func TestForecastKeepsTheNodesReleases(t *testing.T) {
	playForecastWorlds(t, 0x72656c73, engine.ForecastReleasesAgree)
}
