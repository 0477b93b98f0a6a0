// Package minheap is a binary min-heap over a slice of values that order themselves.
// It is container/heap's algorithm, typed: through container/heap each value pushed
// and popped is boxed in an interface, an allocation apiece, which showed in the
// profiles of the simulator's event queue and the engine's timers.
package minheap

// Ordered is a value that knows whether it comes before another.
type Ordered[T any] interface {
	Before(T) bool
}

// Heap holds its values in heap order: h[0] is the least.
type Heap[T Ordered[T]] []T

// Push adds x.
func (h *Heap[T]) Push(x T) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].Before(s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

// Pop removes and returns the least value. The slot it leaves is zeroed, so that what
// the value points to is not kept alive. h must not be empty.
func (h *Heap[T]) Pop() T {
	s := *h
	top, n := s[0], len(s)-1
	s[0] = s[n]
	var zero T
	s[n] = zero
	s = s[:n]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < n && s[l].Before(s[least]) {
			least = l
		}
		if r < n && s[r].Before(s[least]) {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}
