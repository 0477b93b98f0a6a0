package engine

import (
	"testing"
	"unsafe"

	"github.com/muster-sched/muster/internal/queue"
)

// TestResolveKeepsTwoReasons checks that a reason going back and forth between two kinds
// is rendered once per kind, and that a reason that says something else is rendered
// anew.
func TestResolveKeepsTwoReasons(t *testing.T) {
	g := &group{}
	unschedulable := queue.Reason{Kind: queue.QueueNotFound, Queue: "a"}
	reserved := queue.Reason{Kind: queue.Reserved, ReservedFor: "ns/big"}
	_, first := g.resolve(&unschedulable)
	_, other := g.resolve(&reserved)
	_, again := g.resolve(&unschedulable)
	if again != first || unsafe.StringData(again) != unsafe.StringData(first) {
		t.Errorf("the reason it had two calls ago was rendered again: %q then %q", first, again)
	}
	if _, back := g.resolve(&reserved); unsafe.StringData(back) != unsafe.StringData(other) {
		t.Errorf("the reserved reason was rendered again")
	}
	moved := queue.Reason{Kind: queue.Reserved, ReservedFor: "ns/bigger"}
	if r, text := g.resolve(&moved); text != moved.String() || r.ReservedFor != "ns/bigger" {
		t.Errorf("a reason with a new holder resolved to %q (%+v), want %q", text, r, moved.String())
	}
	if _, text := g.resolve(&reserved); text != reserved.String() {
		t.Errorf("after three reasons, the first resolved to %q, want %q", text, reserved.String())
	}
}
