// Command kubectl-muster is muster's kubectl plugin: install it on the PATH and run
// `kubectl muster explain KIND/NAME -n NAMESPACE`.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/muster-sched/muster/internal/cli"
	"github.com/muster-sched/muster/internal/version"
)

func main() {
	root := &cobra.Command{
		Use:           "kubectl-muster",
		Short:         "muster's kubectl plugin",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(cli.NewExplainCmd())
	version.Install(root)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl-muster:", err)
		os.Exit(1)
	}
}
