// Command muster-scheduler is the binary of muster's server image: `muster serve` and
// `muster version` only. It links neither the sandbox's embedded control plane, nor the
// simulator, nor the benchmark, which the muster command carries for development.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/muster-sched/muster/internal/serve"
	"github.com/muster-sched/muster/internal/version"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "muster-scheduler:", err)
		os.Exit(1)
	}
}

// newRootCmd returns the command tree: serve and version.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "muster-scheduler",
		Short:         "muster's gang scheduler, as deployed: serve and version",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serve.NewCommand())
	version.Install(root)
	return root
}
