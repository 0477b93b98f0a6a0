package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestWithFallback(t *testing.T) {
	specific := GroupPolicy{StartTimeout: dur(time.Minute), MaxRetries: ptr[int32](0)}
	fallback := DefaultGroupPolicy()
	got := specific.WithFallback(fallback)

	want := GroupPolicy{
		StartTimeout:    dur(time.Minute),
		RecoveryTimeout: dur(DefaultRecoveryTimeout),
		MaxRetries:      ptr[int32](0),
		BackoffBase:     dur(DefaultBackoffBase),
		BackoffMax:      dur(DefaultBackoffMax),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithFallback (-want +got):\n%s", diff)
	}

	// The result shares no pointers with its inputs.
	got.BackoffBase.Duration = time.Hour
	*got.MaxRetries = 9
	if fallback.BackoffBase.Duration != DefaultBackoffBase || *specific.MaxRetries != 0 {
		t.Errorf("mutating the result changed an input: fallback.backoffBase=%s specific.maxRetries=%d",
			fallback.BackoffBase.Duration, *specific.MaxRetries)
	}
}

func TestGroupPolicyValidateAllowsUnset(t *testing.T) {
	if err := (&GroupPolicy{}).Validate("spec.defaults"); err != nil {
		t.Errorf("Validate of an empty policy = %v, want nil", err)
	}
	p := &GroupPolicy{MaxRetries: ptr[int32](-3)}
	if err := p.Validate("spec.defaults"); err == nil || err.Error() != "spec.defaults.maxRetries: -3: must be >= 0" {
		t.Errorf("Validate = %v, want spec.defaults.maxRetries: -3: must be >= 0", err)
	}
}

func TestAddToScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	for _, kind := range []string{"Queue", "QueueList"} {
		if _, err := scheme.New(GroupVersion.WithKind(kind)); err != nil {
			t.Errorf("scheme.New(%s): %v", kind, err)
		}
	}
	if scheme.Recognizes(GroupVersion.WithKind(ConfigurationKind)) {
		t.Errorf("Configuration is registered, but it is a file format, not an API object")
	}
}
