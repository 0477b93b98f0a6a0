package engine

import (
	"cmp"
	"iter"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-sched/muster/internal/cluster"
)

// maxVictimTrials bounds the placements chooseVictims tries in its exact search before
// it falls back to the greedy one: subsets of the candidates, smallest first.
const maxVictimTrials = 4096

// chooseVictims returns the fewest candidates whose eviction lets the preemptor in, as
// fits tells on a snapshot without the evicted groups' members, or nil if evicting them
// all would not. snap is not modified.
//
// It tries the subsets of the candidates by size, smallest first, and stops at the first
// size where some subset fits: the answer is a minimum set. Among the sets of that size
// it prefers the one that frees the least beyond the need (see betterVictims), then the
// one that spares the most valuable candidates: lower priority first, then the
// youngest. When the search would take more than maxVictimTrials
// placements, it falls back to the greedy search (see greedyVictims): a set where no
// victim can be spared, not always the smallest.
func chooseVictims(snap *cluster.Snapshot, candidates []*group, scarce corev1.ResourceName, held map[*group]cluster.Resources,
	fits func(trial *cluster.Snapshot, evicted []*group) bool) []*group {
	trial := snap.Clone()
	for _, v := range candidates {
		v.removeFrom(trial)
	}
	if !fits(trial, candidates) {
		return nil
	}
	for _, v := range candidates {
		v.addTo(trial)
	}
	if best, ok := exactVictims(trial, candidates, scarce, held, fits); ok {
		return best
	}
	return greedyVictims(snap, candidates, fits)
}

// exactVictims searches the subsets of candidates by size on trial, which holds every
// candidate's members, and leaves it so. Within a size it tries the subsets best first
// (betterVictims needs only what each candidate holds, not a placement), so the first
// that fits is the answer and the rest are not placed. It returns false when the search
// passed maxVictimTrials placements without finding a set.
func exactVictims(trial *cluster.Snapshot, candidates []*group, scarce corev1.ResourceName, held map[*group]cluster.Resources,
	fits func(trial *cluster.Snapshot, evicted []*group) bool) ([]*group, bool) {
	n := len(candidates)
	trials := 0
	for k := 1; k <= n; k++ {
		if trials+binomial(n, k) > maxVictimTrials && k < n {
			return nil, false
		}
		sets := make([]victimSet, 0, binomial(n, k))
		for idx := range combinations(n, k) {
			sets = append(sets, victimSet{idx: slices.Clone(idx), freed: freedBy(idx, candidates, held)})
		}
		slices.SortFunc(sets, func(a, b victimSet) int { return betterVictims(a, b, scarce) })
		set := make([]*group, k)
		for _, vs := range sets {
			for i, j := range vs.idx {
				set[i] = candidates[j]
				set[i].removeFrom(trial)
			}
			trials++
			ok := fits(trial, set)
			for _, v := range set {
				v.addTo(trial)
			}
			if ok {
				return set, true
			}
		}
	}
	return nil, false // cannot happen: the full set fits (chooseVictims checked)
}

// victimSet is a set of candidates, as increasing indexes into them (most valuable
// first), and what they hold together.
type victimSet struct {
	idx   []int
	freed cluster.Resources
}

// betterVictims orders two victim sets of one size, the better first: the one that
// frees less of scarce, then of cpu, then of memory; then the one that spares the more
// valuable candidates (its first index is later; on a tie, its next one): lower
// priority, then admitted later (the youngest), or for reclaim the queue borrowing the
// most. The order is total: two different sets differ in their indexes.
func betterVictims(a, b victimSet, scarce corev1.ResourceName) int {
	for _, name := range []corev1.ResourceName{scarce, corev1.ResourceCPU, corev1.ResourceMemory} {
		if c := cmp.Compare(a.freed[name], b.freed[name]); c != 0 {
			return c
		}
	}
	return slices.Compare(b.idx, a.idx)
}

// freedBy sums what the candidates at idx hold.
func freedBy(idx []int, candidates []*group, held map[*group]cluster.Resources) cluster.Resources {
	out := cluster.Resources{}
	for _, i := range idx {
		out.Add(held[candidates[i]])
	}
	return out
}

// requestsHeld returns what each group's live bound members request.
func requestsHeld(groups []*group) map[*group]cluster.Resources {
	out := make(map[*group]cluster.Resources, len(groups))
	for _, g := range groups {
		r := cluster.Resources{}
		for key, p := range g.members {
			if g.nodeOf(key, p) != "" && !terminal(p) {
				r.Add(g.requests[key])
			}
		}
		out[g] = r
	}
	return out
}

// greedyVictims is the fallback search: on a copy of snap it removes every candidate's
// members, then gives each candidate its nodes back, most valuable first (candidates
// come so, see byValue), as long as the preemptor still fits without it. Each victim
// returned is needed given the ones spared before it. snap is not modified.
func greedyVictims(snap *cluster.Snapshot, candidates []*group, fits func(trial *cluster.Snapshot, evicted []*group) bool) []*group {
	trial := snap.Clone()
	for _, v := range candidates {
		v.removeFrom(trial)
	}
	var victims []*group
	for i, v := range candidates {
		v.addTo(trial)
		if !fits(trial, append(slices.Clip(victims), candidates[i+1:]...)) {
			v.removeFrom(trial)
			victims = append(victims, v)
		}
	}
	return victims
}

// binomial returns n choose k, saturating at maxVictimTrials+1.
func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > maxVictimTrials {
			return maxVictimTrials + 1
		}
	}
	return r
}

// combinations yields the k-element subsets of 0..n-1 as increasing indexes, in
// lexicographic order. The slice yielded is reused.
func combinations(n, k int) iter.Seq[[]int] {
	return func(yield func([]int) bool) {
		idx := make([]int, k)
		for i := range idx {
			idx[i] = i
		}
		for {
			if !yield(idx) {
				return
			}
			i := k - 1
			for i >= 0 && idx[i] == n-k+i {
				i--
			}
			if i < 0 {
				return
			}
			idx[i]++
			for j := i + 1; j < k; j++ {
				idx[j] = idx[j-1] + 1
			}
		}
	}
}
