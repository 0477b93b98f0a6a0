package lifecycle

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// ErrInvalidPolicy is wrapped by every error Policy.Validate returns.
var ErrInvalidPolicy = errors.New("invalid lifecycle policy")

// jitterDivisor bounds the jitter added to a backoff delay to delay/jitterDivisor (10%).
const jitterDivisor = 10

// Policy holds a group's timeouts and retry settings.
type Policy struct {
	// StartTimeout bounds the time from admission until minMember members are Ready.
	StartTimeout time.Duration
	// RecoveryTimeout bounds the time a Running group may stay below minMember Ready
	// members before it is evicted.
	RecoveryTimeout time.Duration
	// MaxRetries is how many failed attempts are retried: MaxRetries=3 allows 4 attempts.
	MaxRetries int
	// BackoffBase is the delay after the first failed attempt; it doubles with each
	// further failure.
	BackoffBase time.Duration
	// BackoffMax caps the doubled delay (before jitter).
	BackoffMax time.Duration
	// JitterSeed seeds the deterministic jitter added to each backoff delay. Callers
	// derive it from something stable per group (a hash of its UID) so that groups that
	// fail together do not retry together.
	JitterSeed uint64
}

// DefaultPolicy returns the policy used when neither the group nor its queue sets one:
// 5m start timeout, 5m recovery timeout, 3 retries, backoff from 30s capped at 10m.
func DefaultPolicy() Policy {
	return Policy{
		StartTimeout:    5 * time.Minute,
		RecoveryTimeout: 5 * time.Minute,
		MaxRetries:      3,
		BackoffBase:     30 * time.Second,
		BackoffMax:      10 * time.Minute,
	}
}

// Validate returns an error naming every field whose value is out of range, or nil.
// Timeouts and BackoffBase must be positive, MaxRetries not negative, and BackoffMax at
// least BackoffBase. Each error wraps ErrInvalidPolicy.
func (p Policy) Validate() error {
	var errs []error
	positive := func(field string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%w: %s must be greater than 0, found %s", ErrInvalidPolicy, field, d))
		}
	}
	positive("StartTimeout", p.StartTimeout)
	positive("RecoveryTimeout", p.RecoveryTimeout)
	positive("BackoffBase", p.BackoffBase)
	if p.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxRetries must be at least 0, found %d", ErrInvalidPolicy, p.MaxRetries))
	}
	if p.BackoffMax < p.BackoffBase {
		errs = append(errs, fmt.Errorf("%w: BackoffMax must be at least BackoffBase (%s), found %s",
			ErrInvalidPolicy, p.BackoffBase, p.BackoffMax))
	}
	return errors.Join(errs...)
}

// maxAttempts is the number of attempts the policy allows in all; a negative MaxRetries
// counts as 0.
func (p Policy) maxAttempts() int {
	return max(p.MaxRetries, 0) + 1
}

// Backoff returns the delay after the failed-th failed attempt (failed ≥ 1):
// BackoffBase·2^(failed-1), capped at BackoffMax, plus a jitter of up to 10% of that
// capped delay, in whole milliseconds. The jitter is added after the cap, so a capped delay lies between
// BackoffMax and 1.1·BackoffMax and capped groups still spread out. It is drawn from a
// PCG generator seeded with JitterSeed and failed, so it is the same every time for one
// seed and attempt. Non-positive inputs give a zero delay rather than a panic.
func (p Policy) Backoff(failed int) time.Duration {
	if failed < 1 || p.BackoffBase <= 0 {
		return 0
	}
	d := p.BackoffBase
	for i := 1; i < failed && d < p.BackoffMax; i++ {
		if d > p.BackoffMax/2 {
			d = p.BackoffMax
			break
		}
		d *= 2
	}
	d = min(d, max(p.BackoffMax, p.BackoffBase))
	rng := rand.New(rand.NewPCG(p.JitterSeed, uint64(failed)))
	jitter := time.Duration(rng.Int64N(int64(d/jitterDivisor/time.Millisecond)+1)) * time.Millisecond
	if d > math.MaxInt64-jitter {
		return math.MaxInt64
	}
	return d + jitter
}
