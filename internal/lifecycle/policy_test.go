package lifecycle

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPolicyValidate(t *testing.T) {
	valid := DefaultPolicy()
	with := func(edit func(*Policy)) Policy {
		p := valid
		edit(&p)
		return p
	}
	tests := []struct {
		name   string
		policy Policy
		// want lists the substrings expected in the error, one per invalid field; empty
		// means the policy is valid.
		want []string
	}{
		{name: "default", policy: valid},
		{name: "zero retries and base equal to max", policy: with(func(p *Policy) {
			p.MaxRetries, p.BackoffMax = 0, p.BackoffBase
		})},
		{name: "zero start timeout", policy: with(func(p *Policy) { p.StartTimeout = 0 }),
			want: []string{"StartTimeout must be greater than 0, found 0s"}},
		{name: "negative recovery timeout", policy: with(func(p *Policy) { p.RecoveryTimeout = -time.Minute }),
			want: []string{"RecoveryTimeout must be greater than 0, found -1m0s"}},
		{name: "negative retries", policy: with(func(p *Policy) { p.MaxRetries = -1 }),
			want: []string{"MaxRetries must be at least 0, found -1"}},
		{name: "zero backoff base", policy: with(func(p *Policy) { p.BackoffBase = 0 }),
			want: []string{"BackoffBase must be greater than 0, found 0s"}},
		{name: "max below base", policy: with(func(p *Policy) { p.BackoffMax = 10 * time.Second }),
			want: []string{"BackoffMax must be at least BackoffBase (30s), found 10s"}},
		{name: "zero value names every field", policy: Policy{}, want: []string{
			"StartTimeout must be greater than 0, found 0s",
			"RecoveryTimeout must be greater than 0, found 0s",
			"BackoffBase must be greater than 0, found 0s",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", tc.policy, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("Validate(%+v) = %v, want an error wrapping ErrInvalidPolicy", tc.policy, err)
			}
			var got []string
			for _, line := range strings.Split(err.Error(), "\n") {
				got = append(got, strings.TrimPrefix(line, ErrInvalidPolicy.Error()+": "))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate(%+v) errors (-want +got):\n%s", tc.policy, diff)
			}
		})
	}
}

// TestBackoffDoublesAndCaps checks each delay against its unjittered value: base·2^(n-1)
// capped at BackoffMax, plus at most 10%.
func TestBackoffDoublesAndCaps(t *testing.T) {
	p := Policy{BackoffBase: 30 * time.Second, BackoffMax: 5 * time.Minute, JitterSeed: 42}
	tests := []struct {
		failed int
		base   time.Duration
	}{
		{1, 30 * time.Second},
		{2, time.Minute},
		{3, 2 * time.Minute},
		{4, 4 * time.Minute},
		{5, 5 * time.Minute}, // 8m, capped
		{6, 5 * time.Minute},
		{62, 5 * time.Minute}, // 30s·2^61 would overflow
		{1000, 5 * time.Minute},
	}
	for _, tc := range tests {
		got := p.Backoff(tc.failed)
		if got < tc.base || got > tc.base+tc.base/jitterDivisor {
			t.Errorf("Backoff(%d) = %s, want within [%s, %s]", tc.failed, got, tc.base, tc.base+tc.base/jitterDivisor)
		}
		if got%time.Millisecond != 0 {
			t.Errorf("Backoff(%d) = %s, want whole milliseconds", tc.failed, got)
		}
	}
}

func backoffs(p Policy, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = p.Backoff(i + 1)
	}
	return out
}

// TestBackoffJitterIsDeterministic pins the delays for one seed (a change here changes
// every group's retry times, so it must be deliberate) and checks another seed differs.
func TestBackoffJitterIsDeterministic(t *testing.T) {
	p := Policy{BackoffBase: 30 * time.Second, BackoffMax: 5 * time.Minute, JitterSeed: 1}
	ms := time.Millisecond
	want := []time.Duration{32992 * ms, 64617 * ms, 126812 * ms, 242940 * ms, 315940 * ms, 323000 * ms}
	got := backoffs(p, len(want))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Backoff with seed 1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(got, backoffs(p, len(want))); diff != "" {
		t.Errorf("Backoff with seed 1 differs between calls (-first +second):\n%s", diff)
	}
	other := p
	other.JitterSeed = 2
	if diff := cmp.Diff(got, backoffs(other, len(want))); diff == "" {
		t.Errorf("Backoff with seeds 1 and 2 both gave %v, want different jitter", got)
	}
}

func TestBackoffDegenerateInputs(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		failed int
		want   time.Duration
	}{
		{"no failure yet", Policy{BackoffBase: time.Second, BackoffMax: time.Minute}, 0, 0},
		{"negative attempt", Policy{BackoffBase: time.Second, BackoffMax: time.Minute}, -3, 0},
		{"zero base", Policy{BackoffMax: time.Minute}, 3, 0},
		{"negative base", Policy{BackoffBase: -time.Second, BackoffMax: time.Minute}, 3, 0},
		{"below jitter resolution", Policy{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}, 5, time.Millisecond},
		{"max below base uses base", Policy{BackoffBase: time.Millisecond, BackoffMax: time.Nanosecond}, 5, time.Millisecond},
		{"largest duration", Policy{BackoffBase: math.MaxInt64, BackoffMax: math.MaxInt64}, 3, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.policy.Backoff(tc.failed); got != tc.want {
				t.Errorf("Backoff(%d) with %+v = %s, want %s", tc.failed, tc.policy, got, tc.want)
			}
		})
	}
}
