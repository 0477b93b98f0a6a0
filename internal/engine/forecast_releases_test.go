package engine

import (
	"fmt"
	"maps"
	"strings"
)

// ForecastReleasesAgree returns how the releases the forecast keeps of each node,
// where it would not read them again (see releases), differ from those read afresh from
// the nodes' members now, or "". It then reads the nodes' releases as a forecast does,
// for the next call to check what it keeps of them.
func ForecastReleasesAgree(e *Engine) string {
	f := &e.forecast
	var diffs []string
	for _, n := range e.snap.Nodes() {
		c := f.pods[n]
		if c == nil || c.gen != n.Generation() || c.fresh || f.holdsChanged(c) {
			continue
		}
		e.readMoving(c, e.now)
		for i, m := range c.members {
			kept, read := c.releases[i], e.releaseOf(m, n.Name(), e.now)
			if kept.Node != read.Node || !kept.At.Equal(read.At) || kept.Held != read.Held || !maps.Equal(kept.Resources, read.Resources) {
				diffs = append(diffs, fmt.Sprintf("%s %s: kept %+v, read %+v", n.Name(), m.key, kept, read))
			}
		}
	}
	e.releases(e.now)
	return strings.Join(diffs, "\n")
}
