package forecast

import "slices"

// levels is a resource vector over time, kept as the value in force between each two
// instants at which it changes rather than as the changes themselves: what is free
// throughout a window is then the least of the window's levels, without adding up
// every change before it (the forecast asks that of every node for every candidate
// start), and a take subtracts from the levels it spans.
type levels struct {
	// d is the vector's length.
	d int
	// at are the instants at which the vector changes, sorted; at[0] is now.
	at []int64
	// vals holds the vector in force from at[k] until at[k+1] (the last for ever) at
	// vals[k*d : (k+1)*d].
	vals []int64
}

// level is the vector in force from at[k] on.
func (l *levels) level(k int) []int64 {
	return l.vals[k*l.d : (k+1)*l.d : (k+1)*l.d]
}

// index is the index of the level in force at t, which is not before at[0]. Written
// out rather than with sort.Search: it runs for every node and candidate.
func (l *levels) index(t int64) int {
	if len(l.at) <= 8 {
		// A node has a few instants: a scan is cheaper than a binary search.
		k := 0
		for k+1 < len(l.at) && l.at[k+1] <= t {
			k++
		}
		return k
	}
	lo, hi := 0, len(l.at)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.at[m] <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// minIn writes into dst the least of each dimension throughout [t, end).
func (l *levels) minIn(t, end int64, dst []int64) {
	l.minFrom(l.index(t), end, dst)
}

// minFrom writes into dst the least of each dimension from level k until end.
func (l *levels) minFrom(k int, end int64, dst []int64) {
	copy(dst, l.level(k))
	for k++; k < len(l.at) && l.at[k] < end; k++ {
		for i, v := range l.level(k) {
			dst[i] = min(dst[i], v)
		}
	}
}

// negative reports whether some level is below zero in some dimension.
func (l *levels) negative() bool {
	return slices.ContainsFunc(l.vals, func(v int64) bool { return v < 0 })
}

// split makes t, which is after at[0], an instant of l, with the level in force before
// it, and returns its index and whether it was not one already.
func (l *levels) split(t int64) (int, bool) {
	k := l.index(t)
	if l.at[k] == t {
		return k, false
	}
	k++
	l.at = append(l.at, 0)
	copy(l.at[k+1:], l.at[k:])
	l.at[k] = t
	n, d := len(l.vals), l.d
	l.vals = append(l.vals, l.vals[n-d:]...)
	copy(l.vals[(k+1)*d:], l.vals[k*d:n])
	copy(l.vals[k*d:(k+1)*d], l.vals[(k-1)*d:k*d])
	return k, true
}

// take subtracts r during [t, end), end never or after t, and reports which of t and
// end became new instants.
func (l *levels) take(t, end int64, r []int64) (newT, newEnd bool) {
	k, newT := l.split(t)
	stop := len(l.at)
	if end != never {
		stop, newEnd = l.split(end)
	}
	for ; k < stop; k++ {
		addTo(l.level(k), r, -1)
	}
	return newT, newEnd
}

// add adds r from t on, or from at[0] if t is not after it.
func (l *levels) add(t int64, r []int64) {
	k := 0
	if t > l.at[0] {
		k, _ = l.split(t)
	}
	for ; k < len(l.at); k++ {
		addTo(l.level(k), r, 1)
	}
}
