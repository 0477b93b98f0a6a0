package engine

import (
	"fmt"
	"slices"
	"strings"
)

// ForecastReadsAgree returns how the live members the forecast reads on the nodes,
// from what it kept of them (membersOn, readGroup), differ from those a walk over every
// pod on every node finds, or "". It keeps what it reads, as a forecast does.
func ForecastReadsAgree(e *Engine) string {
	var kept, walked []string
	for _, n := range e.snap.Nodes() {
		if !n.Ready() || n.Node.Spec.Unschedulable {
			continue
		}
		for _, m := range e.membersOn(n).members {
			if !terminal(m.pod) && e.readGroup(m.group, e.now).live {
				kept = append(kept, fmt.Sprintf("%s %s %p %v", n.Name(), m.group.key, m.pod, m.requests))
			}
		}
		for key := range n.Pods() {
			g := e.groups[e.podGroup[key]]
			if g == nil || !g.started || g.members[key] == nil || terminal(g.members[key]) {
				continue
			}
			walked = append(walked, fmt.Sprintf("%s %s %p %v", n.Name(), g.key, g.members[key], g.requests[key]))
		}
	}
	slices.Sort(kept)
	slices.Sort(walked)
	if !slices.Equal(kept, walked) {
		return fmt.Sprintf("kept:\n%s\nwalked:\n%s", strings.Join(kept, "\n"), strings.Join(walked, "\n"))
	}
	return ""
}
