// Command muster is an all-or-nothing (gang) scheduler for distributed training on
// Kubernetes. This file holds flags and wiring only; every decision lives in internal/.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "muster:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "muster",
		Short:         "Gang scheduler for distributed training on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	sandboxCmd := newSandboxCmd()
	root.AddCommand(
		newDemoCmd(),
		newSimCmd(),
		newServeCmd(),
		newDashboardCmd(),
		newExplainCmd(),
		newBenchCmd(),
		sandboxCmd,
	)
	defaultToSandbox(root, sandboxCmd)
	return root
}
