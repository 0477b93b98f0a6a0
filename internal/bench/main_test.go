package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

// TestMain removes the muster binary the tests built (sandboxtest.MusterBinary) once
// they have run.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := sandboxtest.RemoveMusterBinary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}
