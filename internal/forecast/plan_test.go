package forecast

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestFromKept brings the nodes to a window, plans on some of them, and moves to
// another window from there (fromKept); it checks every node against what it has free
// throughout the new window: the same room, and the same capacity where it has room.
func TestFromKept(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		hour := func(label string, lo, hi int) int64 {
			return int64(rapid.IntRange(lo, hi).Draw(rt, label)) * int64(time.Hour)
		}
		var nodes []Node
		var releases []Release
		// Many nodes, few instants: the windows are seldom too far apart to move.
		for i := range rapid.IntRange(1, 12).Draw(rt, "nodes") {
			name := fmt.Sprintf("n%d", i)
			nodes = append(nodes, Node{Name: name, Free: gpus(rapid.Int64Range(0, 4).Draw(rt, "free"))})
			for j := range rapid.IntRange(0, 1).Draw(rt, "releases") {
				releases = append(releases, Release{Node: name, At: t0.Add(time.Duration(hour(fmt.Sprint("at", j), 0, 12))),
					Resources: gpus(rapid.Int64Range(1, 4).Draw(rt, "r"))})
			}
		}
		p := newProfile(t0, nodes, releases, []Group{gang("g", 1, 1, time.Hour)})
		window := func(label string) (int64, int64) {
			start := p.now + hour(label+"start", 0, 12)
			if rapid.Bool().Draw(rt, label+"forever") {
				return start, never
			}
			return start, start + hour(label+"length", 1, 8)
		}
		// Takes of what is free leave dips in the nodes' capacity, never below zero.
		take := func(label string) int {
			ni := rapid.IntRange(0, len(p.nodes)-1).Draw(rt, label+"node")
			start, end := window(label)
			a := make([]int64, 1)
			p.nodes[ni].minIn(start, end, a)
			if a[0] > 0 {
				p.take(ni, start, end, []int64{rapid.Int64Range(1, a[0]).Draw(rt, label+"r")})
			}
			return ni
		}
		for i := range rapid.IntRange(0, 6).Draw(rt, "dips") {
			take(fmt.Sprint("dip", i))
		}
		smallest := rapid.Int64Range(1, 3).Draw(rt, "smallest")
		first := search{p: p, w: p.scratchSpace(), smallest: smallest}
		first.refresh(window("first"))
		for i := range rapid.IntRange(0, 2).Draw(rt, "taken") {
			p.work.taken = append(p.work.taken, take(fmt.Sprint("taken", i)))
		}
		next := search{p: p, w: p.scratchSpace(), smallest: smallest}
		start, end := window("next")
		next.refresh(start, end)
		room := 0
		for ni := range p.nodes {
			a := make([]int64, 1)
			p.nodes[ni].minIn(start, end, a)
			room += int(a[0] / smallest)
			if got := p.work.avail[ni]; a[0] >= smallest && got != a[0] || a[0] < smallest && got >= smallest {
				rt.Fatalf("node %d: %d free in the window, %d kept", ni, a[0], got)
			}
		}
		if next.room != room {
			rt.Fatalf("room for %d, %d kept", room, next.room)
		}
	})
}
