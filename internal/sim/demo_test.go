package sim

import (
	"testing"
	"time"
)

// TestTwoJobs is the guide's example under both schedulers: the pod-by-pod baseline
// deadlocks with both jobs partial; muster runs one whole, then the other, holding nothing
// while incomplete.
func TestTwoJobs(t *testing.T) {
	base := TwoJobs(NewPodByPod(), 30*time.Minute)
	if got, want := base.Summary(), "a unfinished, b unfinished"; got != want {
		t.Errorf("pod-by-pod: %s, want %s (the deadlock)", got, want)
	}
	// Both jobs hold 4 GPUs each for the whole 30 minutes: 8 × 1800 GPU-seconds.
	if got := base.HeldIncomplete(); got != 8*1800 {
		t.Errorf("pod-by-pod held %v GPU-seconds while incomplete, want %d", got, 8*1800)
	}

	gang := TwoJobs(NewEngine(), 30*time.Minute)
	if got, want := gang.Summary(), "a finished at 10m30s, b finished at 21m"; got != want {
		t.Errorf("muster: %s, want %s", got, want)
	}
	if got := gang.HeldIncomplete(); got != 0 {
		t.Errorf("muster held %v GPU-seconds while incomplete, want 0", got)
	}
}
