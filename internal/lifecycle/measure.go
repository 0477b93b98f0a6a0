package lifecycle

import (
	"math/big"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// amounts maps resource names to exact amounts in each resource's natural unit (GPUs,
// CPU cores, bytes). An amounts value and the rationals in it are never mutated once
// built, so States that share one stay independent.
type amounts map[corev1.ResourceName]*big.Rat

// amountsOf converts a resource list to exact amounts, dropping zero and negative
// quantities (nothing is held by them). It returns nil for an empty list.
func amountsOf(l corev1.ResourceList) amounts {
	var out amounts
	for name, q := range l {
		r := quantityRat(q)
		if r.Sign() <= 0 {
			continue
		}
		if out == nil {
			out = make(amounts, len(l))
		}
		out[name] = r
	}
	return out
}

// quantityRat returns q exactly as a rational number.
func quantityRat(q resource.Quantity) *big.Rat {
	dec := q.AsDec() // q is a copy: converting it to its decimal form touches no caller data
	r := new(big.Rat).SetInt(dec.UnscaledBig())
	scale := int64(dec.Scale())
	switch {
	case scale > 0:
		r.Quo(r, pow10(scale))
	case scale < 0:
		r.Mul(r, pow10(-scale))
	}
	return r
}

func pow10(n int64) *big.Rat {
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil))
}

// plusIntegral returns a new amounts equal to a + rate·d, with d in seconds. The result
// is exact: rate is piecewise constant between observations, so each interval adds
// exactly rate·d. a and rate are left unchanged.
func (a amounts) plusIntegral(rate amounts, d time.Duration) amounts {
	if len(rate) == 0 || d <= 0 {
		return a
	}
	seconds := big.NewRat(int64(d), int64(time.Second))
	out := make(amounts, len(a)+len(rate))
	for name, v := range a {
		out[name] = v
	}
	for name, v := range rate {
		delta := new(big.Rat).Mul(v, seconds)
		if prev, ok := out[name]; ok {
			delta.Add(delta, prev)
		}
		out[name] = delta
	}
	return out
}

// floats returns the amounts as float64 values, rounded once from the exact sums.
func (a amounts) floats() map[corev1.ResourceName]float64 {
	out := make(map[corev1.ResourceName]float64, len(a))
	for name, v := range a {
		out[name], _ = v.Float64()
	}
	return out
}

// advance moves the state's clock to now, integrating what the group held since the
// previous event into the resource-seconds held before Ready, unless the group has
// already been Ready in its current attempt. A now earlier than the clock is treated
// as no time passing, so the integral never decreases.
func (s State) advance(now time.Time) State {
	if s.clock.IsZero() || !now.After(s.clock) {
		if s.clock.IsZero() {
			s.clock = now
		}
		return s
	}
	if !s.readyInAttempt && len(s.held) > 0 {
		s.heldBeforeReady = s.heldBeforeReady.plusIntegral(s.held, now.Sub(s.clock))
		s.heldChanges++
	}
	s.clock = now
	return s
}

// formatResourceList renders a resource list as "name:quantity" pairs in name order,
// or "none" when it is empty.
func formatResourceList(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "none"
	}
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, string(name))
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		q := l[corev1.ResourceName(name)]
		parts[i] = name + ":" + q.String()
	}
	return strings.Join(parts, ",")
}

// sameList reports whether a and b list the same amounts of the same resources.
func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for name, q := range a {
		if r, ok := b[name]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}
