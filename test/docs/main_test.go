// Package docs runs the commands that README.md and docs/ give, as written, against the
// sandbox, and names why it skips each one it cannot run; and applies every folder of
// examples/ with kubectl apply -R -f, as the README says they apply.
package docs

import (
	"fmt"
	"os"
	"testing"

	"github.com/muster-sched/muster/internal/sandbox"
	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	seed, err := sandbox.Preset(sandbox.PresetSeed, sandbox.PresetOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := sandboxtest.Run(m, sandboxtest.Options{Cluster: seed})
	if binDir != "" { // the muster and kubectl binaries built for the commands
		if err := os.RemoveAll(binDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}
