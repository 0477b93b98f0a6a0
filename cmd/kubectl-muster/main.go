// Command kubectl-muster is muster's kubectl plugin: install it on the PATH (or with
// krew, deploy/krew/muster.yaml) and run `kubectl muster get queues`, `kubectl muster
// get groups`, `kubectl muster stop|resume GROUP` and `kubectl muster explain KIND/NAME`.
package main

import (
	"fmt"
	"os"

	"github.com/muster-sched/muster/internal/cli"
	"github.com/muster-sched/muster/internal/version"
)

func main() {
	root := cli.NewPluginCmd()
	version.Install(root)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl-muster:", err)
		os.Exit(1)
	}
}
