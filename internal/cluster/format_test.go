package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestFormatAgreesWithQuantity checks Format's integer shortcut against the Quantity it
// stands for, around every bound it has.
func TestFormatAgreesWithQuantity(t *testing.T) {
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, "nvidia.com/gpu"}
	var values []int64
	for _, v := range []int64{0, 1, 8, 500, 999, 1000, 1001, 1500, 4000, 999_000, 999_999, 1000_000, 1001_000, 8 << 30} {
		values = append(values, v, -v)
	}
	for _, name := range names {
		for _, v := range values {
			q := Quantity(name, v)
			if got, want := Format(name, v), q.String(); got != want {
				t.Errorf("Format(%s, %d) = %q, want %q", name, v, got, want)
			}
		}
	}
}
