package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDemoCmd is replaced by the real demo once the engine lands.
func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Replay the two-jobs example with a pod-by-pod baseline and with muster",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("demo: the engine is not built yet")
		},
	}
}
