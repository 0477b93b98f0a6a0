package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-sched/muster/internal/sim"
)

// newDemoCmd replays the guide's two-jobs example in simulated time, with a pod-by-pod
// baseline and with muster's engine, and fails unless the outcome is the expected one.
func newDemoCmd() *cobra.Command {
	var horizon time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Replay the two-jobs example with a pod-by-pod baseline and with muster",
		Long: `demo replays, in simulated time, eight one-GPU nodes and two jobs of eight one-GPU
workers whose pods arrive interleaved: once with a pod-by-pod scheduler (the default
kube-scheduler without gangs) and once with muster's engine. It prints both timelines and,
per job, when all workers were ready, when it finished, and the GPU-seconds it held while
incomplete.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			base := sim.TwoJobs(sim.NewPodByPod(), horizon)
			sim.Report(out, "pod-by-pod (default scheduler, no gang)", base)
			gang := sim.TwoJobs(sim.NewEngine(), horizon)
			sim.Report(out, "muster", gang)
			if gang.HeldIncomplete() != 0 {
				return fmt.Errorf("muster held %.0f GPU-seconds in incomplete groups; want 0", gang.HeldIncomplete())
			}
			fmt.Fprintf(out, "pod-by-pod: %s; %.0f GPU-seconds held by incomplete groups.\n", base.Summary(), base.HeldIncomplete())
			fmt.Fprintf(out, "muster:     %s; 0 GPU-seconds held by incomplete groups.\n", gang.Summary())
			return nil
		},
	}
	cmd.Flags().DurationVar(&horizon, "for", 30*time.Minute, "simulated time to run each replay")
	return cmd
}
