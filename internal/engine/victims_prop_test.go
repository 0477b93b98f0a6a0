package engine

import (
	"fmt"
	"math/bits"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/muster-sched/muster/internal/cluster"
	gt "github.com/muster-sched/muster/internal/gangtest"
	"github.com/muster-sched/muster/internal/placement"
)

// victimCase is a small cluster with running candidate groups and a preemptor.
type victimCase struct {
	snap       *cluster.Snapshot
	candidates []*group
	preemptor  placement.Group
}

// drawVictimCase draws 1–4 nodes of 1–4 GPUs, up to 7 one-shape groups packed onto
// them where they fit, and a preemptor of 1–4 members of 1–2 GPUs, sometimes one per
// node.
func drawVictimCase(t *rapid.T) victimCase {
	var nodes []*corev1.Node
	free := map[string]int{}
	for i := range rapid.IntRange(1, 4).Draw(t, "nodes") {
		name := fmt.Sprintf("n-%d", i)
		gpus := rapid.IntRange(1, 4).Draw(t, "gpus")
		nodes = append(nodes, gt.Node(name).GPU(int64(gpus)).Obj())
		free[name] = gpus
	}
	snap := cluster.New(nodes, nil)
	var candidates []*group
	for gi := range rapid.IntRange(1, 7).Draw(t, "groups") {
		g := &group{key: fmt.Sprintf("g%d", gi), members: map[string]*corev1.Pod{}, requests: map[string]cluster.Resources{}, pending: map[string]string{}}
		g.spec.Priority = int32(rapid.IntRange(0, 2).Draw(t, "priority"))
		for mi := range rapid.IntRange(1, 3).Draw(t, "members") {
			node := nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, "node")].Name
			gpu := rapid.IntRange(1, 2).Draw(t, "gpu")
			if free[node] < gpu {
				continue
			}
			free[node] -= gpu
			p := gt.Pod(fmt.Sprintf("%s-%d", g.key, mi)).GPU(int64(gpu)).Node(node).Obj()
			key := cluster.PodKey(p)
			g.members[key], g.requests[key] = p, cluster.PodRequests(p)
			snap.AddPod(p)
		}
		if len(g.members) > 0 {
			candidates = append(candidates, g)
		}
	}
	pg := gt.Group("pre").Members(rapid.IntRange(1, 4).Draw(t, "preMembers")).GPU(int64(rapid.IntRange(1, 2).Draw(t, "preGPU")))
	return victimCase{snap: snap, candidates: candidates, preemptor: pg.Build()}
}

// TestChooseVictimsAgainstBruteForce checks the exact search against every subset of
// the candidates: it returns a set that makes room exactly when one exists, of the
// smallest size any set has, freeing no more GPUs than the best set of that size, and
// among those sparing the most valuable candidates (the set whose indexes compare
// greatest); and the snapshot is left as it was.
func TestChooseVictimsAgainstBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawVictimCase(t)
		fitsOn := func(trial *cluster.Snapshot, _ []*group) bool { return fits(trial, c.preemptor, nil) }
		before := c.snap.Clone()
		held := requestsHeld(c.candidates)
		got := chooseVictims(c.snap, c.candidates, gt.GPU, held, fitsOn)

		n := len(c.candidates)
		bestSize, bestFreed, bestIdx := -1, int64(0), []int(nil)
		for mask := 0; mask < 1<<n; mask++ {
			size := bits.OnesCount(uint(mask))
			if bestSize >= 0 && size > bestSize {
				continue
			}
			trial := c.snap.Clone()
			var set []int
			for i := range n {
				if mask&(1<<i) != 0 {
					c.candidates[i].removeFrom(trial)
					set = append(set, i)
				}
			}
			if !fitsOn(trial, nil) {
				continue
			}
			freed := freedBy(set, c.candidates, held)[gt.GPU]
			if bestSize < 0 || size < bestSize || freed < bestFreed || freed == bestFreed && slices.Compare(set, bestIdx) > 0 {
				bestSize, bestFreed, bestIdx = size, freed, set
			}
		}
		if bestSize < 0 {
			if got != nil {
				t.Fatalf("no set makes room, chose %v", keysOf(got))
			}
			return
		}
		if bestSize == 0 {
			return // the preemptor fits as is; preempt does not ask then
		}
		if len(got) != bestSize {
			t.Fatalf("chose %d victims %v, the fewest that make room are %d", len(got), keysOf(got), bestSize)
		}
		trial := c.snap.Clone()
		var idx []int
		for _, v := range got {
			v.removeFrom(trial)
			for i, cand := range c.candidates {
				if cand == v {
					idx = append(idx, i)
				}
			}
		}
		if !fitsOn(trial, nil) {
			t.Fatalf("chose %v, which does not make room", keysOf(got))
		}
		if freed := freedBy(idx, c.candidates, held)[gt.GPU]; freed != bestFreed {
			t.Fatalf("chose %v freeing %d GPUs; a set of %d frees %d", keysOf(got), freed, bestSize, bestFreed)
		}
		if slices.Sort(idx); !slices.Equal(idx, bestIdx) {
			t.Fatalf("chose candidates %v; the set of %d freeing %d GPUs that spares the most valuable is %v", idx, bestSize, bestFreed, bestIdx)
		}
		for _, nd := range before.Nodes() {
			if a, b := nd.Free(gt.GPU), c.snap.Node(nd.Name()).Free(gt.GPU); a != b {
				t.Fatalf("node %s: %d GPUs free before, %d after", nd.Name(), a, b)
			}
		}
	})
}
