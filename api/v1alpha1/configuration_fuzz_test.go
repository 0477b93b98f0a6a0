package v1alpha1

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// FuzzParseConfiguration feeds documents to ParseConfiguration (seeds in
// testdata/fuzz/FuzzParseConfiguration) and checks:
//   - a document it accepts gives a complete, valid Configuration: Validate passes, and
//     the policy defaults are set, positive and consistent, checked apart from Validate;
//   - written back as YAML and parsed again, the Configuration is unchanged;
//   - a document it refuses gets an error in which every field problem names its field;
//   - it never panics.
func FuzzParseConfiguration(f *testing.F) {
	f.Add([]byte(header))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfiguration(data)
		if err != nil {
			checkFieldErrors(t, err)
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("an accepted configuration does not validate: %v", err)
		}
		checkComplete(t, c)
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("writing an accepted configuration: %v", err)
		}
		again, err := ParseConfiguration(out)
		if err != nil {
			t.Fatalf("an accepted configuration, written as\n%s\nis refused: %v", out, err)
		}
		if d := cmp.Diff(c, again); d != "" {
			t.Fatalf("written and parsed again, the configuration changed (-first +again):\n%s", d)
		}
	})
}

// checkComplete checks the group defaults of an accepted configuration.
func checkComplete(t *testing.T, c *Configuration) {
	t.Helper()
	p := c.GroupDefaults
	if p.StartTimeout == nil || p.RecoveryTimeout == nil || p.MaxRetries == nil || p.BackoffBase == nil || p.BackoffMax == nil {
		t.Fatalf("accepted group defaults are incomplete: %+v", p)
	}
	if p.StartTimeout.Duration <= 0 || p.RecoveryTimeout.Duration <= 0 || *p.MaxRetries < 0 || p.BackoffBase.Duration <= 0 ||
		p.BackoffMax.Duration < p.BackoffBase.Duration {
		t.Fatalf("accepted group defaults are out of range: %+v", p)
	}
	if c.SchedulerName == "" || c.DefaultQueue == "" || c.StarvationThreshold == nil || c.ReconcilePeriod == nil {
		t.Fatalf("accepted configuration lacks a default: %+v", c)
	}
}

// checkFieldErrors fails unless err has a message and every FieldError in it names a path
// and a reason.
func checkFieldErrors(t *testing.T, err error) {
	t.Helper()
	if err.Error() == "" {
		t.Fatalf("refused with an empty message")
	}
	var walk func(error)
	walk = func(e error) {
		var fe *FieldError
		if errors.As(e, &fe) && (fe.Path == "" || fe.Reason == "") {
			t.Fatalf("a field problem names no field or reason: %+v in %v", fe, err)
		}
		if joined, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range joined.Unwrap() {
				walk(inner)
			}
		}
	}
	walk(err)
}
