package engine

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/muster-sched/muster/internal/cluster"
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

// TestChangedGroupMarksItsNodes: a group lists each node record once, a change marks
// them for the next read, and a record the forecast dropped (its node was not read) is
// forgotten by the groups that listed it at their next change.
func TestChangedGroupMarksItsNodes(t *testing.T) {
	var f forecastState
	g := &group{}
	kept, gone := &nodePods{pass: 1}, &nodePods{}
	f.pods = map[*cluster.NodeInfo]*nodePods{{}: kept, {}: gone}
	f.pass = 1
	g.noteOn(kept)
	g.noteOn(gone)
	g.noteOn(kept)
	if len(g.onNodes) != 2 {
		t.Fatalf("the group lists %d node records, expected 2", len(g.onNodes))
	}
	f.dropUnread()
	if !gone.dropped || kept.dropped || len(f.pods) != 1 {
		t.Fatalf("after dropUnread: dropped %t and %t, %d records kept; expected the unread one dropped", kept.dropped, gone.dropped, len(f.pods))
	}
	if f.holdsChanged(kept) {
		t.Fatal("a node holds a changed group before any change")
	}
	f.noteChanged(g)
	if !f.holdsChanged(kept) || len(g.onNodes) != 1 || g.onNodes[0] != kept {
		t.Fatalf("after the change: node marked %t, the group lists %d records; expected the kept one alone, marked", f.holdsChanged(kept), len(g.onNodes))
	}
	f.nodeReads++
	if f.holdsChanged(kept) {
		t.Fatal("the mark outlived the read it was for")
	}
}
