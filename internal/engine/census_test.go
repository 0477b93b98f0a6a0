package engine

import (
	"fmt"
	"testing"
)

// TestRequestNodesBounded: the census keeps the nodes of at most maxRequestNodes
// requests; past that it starts again rather than growing with every selector tenants
// write.
func TestRequestNodesBounded(t *testing.T) {
	var d deviceCensus
	memo := d.requestNodes()
	for i := range maxRequestNodes {
		memo[fmt.Sprint(i)] = []string{"n0"}
	}
	if got := d.requestNodes(); len(got) != 0 {
		t.Errorf("requestNodes kept %d requests, want a new memo past %d", len(got), maxRequestNodes)
	}
	d.requestNodes()["one"] = nil
	if got := d.requestNodes(); len(got) != 1 {
		t.Errorf("requestNodes kept %d requests, want the 1 below the bound", len(got))
	}
}
