// Package helm tests deploy/helm/muster: rendered by the helm pinned in hack/tools/helm,
// applied to the sandbox with server-side dry-run, and compared with the kustomization.
package helm

import (
	"os"
	"testing"

	"github.com/muster-sched/muster/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { os.Exit(sandboxtest.Run(m, sandboxtest.Options{})) }
