// Package cli holds muster's commands that are shared by more than one binary: `muster
// explain` is also `kubectl muster explain` (binary kubectl-muster).
package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-sched/muster/internal/explain"
	"github.com/muster-sched/muster/internal/source"
)

// SandboxKubeconfig is where `muster sandbox` writes its kubeconfig by default; explain
// falls back to it when no other kubeconfig is given or found.
const SandboxKubeconfig = "muster-sandbox.kubeconfig"

// NewExplainCmd returns the explain command of `muster`, with its own kubectl flags.
func NewExplainCmd() *cobra.Command {
	f := NewFlags()
	cmd := newExplainCmd(f)
	f.AddTo(cmd)
	return cmd
}

// newExplainCmd returns the explain command reading the cluster through f.
func newExplainCmd(f *Flags) *cobra.Command {
	var output string
	var schedulerNames []string
	cmd := &cobra.Command{
		Use:   "explain KIND/NAME",
		Short: "Explain why a group is not running",
		Long: `explain walks the gang-scheduling debugging path for one group, one line per step with
the evidence it found, and ends with a verdict naming the first failing step and the fix:

  1. the parent object and its group exist in the namespace
  2. the group's API is served and muster owns the group (schedulerName of each member)
  3. membership: members vs minMember, pods of the owner outside the group, requests
  4. admission and fit: queue, quota, and muster's diagnosis of fit
  5. after placement: image pulls, volume mounts, init containers, readiness
  6. the timeout: when it fires and what happens then

KIND is ` + strings.Join(source.OwnerKindNames(), ", ") + ` or podgroup; a bare NAME is a plain group
(pods labelled muster.dev/group=NAME). The namespace is --namespace, else the
kubeconfig context's.`,
		Example: `  muster explain pytorchjob/bert -n team-a
  muster explain podgroup/bert -n team-a -o json
  kubectl muster explain sweep --context prod`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.clients()
			if err != nil {
				return err
			}
			namespace, err := f.namespace()
			if err != nil {
				return err
			}
			fs, err := explain.Gather(cmd.Context(), c, args[0], namespace, schedulerNames, time.Now())
			if err != nil {
				return err
			}
			r := explain.Build(fs)
			switch output {
			case "json":
				return r.WriteJSON(cmd.OutOrStdout())
			case "", "text":
				return r.WriteText(cmd.OutOrStdout())
			}
			return fmt.Errorf("--output %q: expected text or json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringSliceVar(&schedulerNames, "scheduler-name", []string{"muster"},
		"muster's schedulerNames: its Configuration's schedulerName, then its additionalSchedulerNames (repeat the flag or separate them with commas)")
	return cmd
}

// NewPluginCmd returns kubectl-muster's root command: get queues, get groups, stop,
// resume and explain, with kubectl's flags (--kubeconfig, --context, -n, --as, ...).
func NewPluginCmd() *cobra.Command {
	f := NewFlags()
	root := &cobra.Command{
		Use:           "kubectl-muster",
		Short:         "muster's kubectl plugin: the queues, the gangs, and why a gang is not running",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f.AddTo(root)
	get := &cobra.Command{Use: "get", Short: "List queues or groups"}
	get.AddCommand(newGetQueuesCmd(f), newGetGroupsCmd(f))
	root.AddCommand(get, newStopCmd(f), newResumeCmd(f), newExplainCmd(f))
	return root
}
