// Package cli holds muster's commands that are shared by more than one binary: `muster
// explain` is also `kubectl muster explain` (binary kubectl-muster).
package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/muster-sched/muster/internal/explain"
)

// SandboxKubeconfig is where `muster sandbox` writes its kubeconfig by default; explain
// falls back to it when no other kubeconfig is given or found.
const SandboxKubeconfig = "muster-sandbox.kubeconfig"

// NewExplainCmd returns the explain command.
func NewExplainCmd() *cobra.Command {
	var kubeconfig, namespace, output, schedulerName string
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

KIND is pytorchjob, tfjob, mpijob, job, jobset or podgroup; a bare NAME is a plain group
(pods labelled muster.dev/group=NAME).`,
		Example: `  muster explain pytorchjob/bert -n team-a
  muster explain podgroup/bert -n team-a -o json
  kubectl muster explain sweep`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			c, err := clients(cfg)
			if err != nil {
				return err
			}
			f, err := explain.Gather(cmd.Context(), c, args[0], namespace, schedulerName, time.Now())
			if err != nil {
				return err
			}
			r := explain.Build(f)
			switch output {
			case "json":
				return r.WriteJSON(cmd.OutOrStdout())
			case "", "text":
				return r.WriteText(cmd.OutOrStdout())
			}
			return fmt.Errorf("--output %q: expected text or json", output)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then ./"+SandboxKubeconfig+")")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the group")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&schedulerName, "scheduler-name", "muster", "muster's schedulerName")
	return cmd
}

// restConfig loads the kubeconfig from the flag, the usual places, or the sandbox's file.
func restConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	} else if _, err := rules.Load(); err != nil || noKubeconfig(rules) {
		if _, statErr := os.Stat(SandboxKubeconfig); statErr == nil {
			rules.ExplicitPath = SandboxKubeconfig
		}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

func noKubeconfig(rules *clientcmd.ClientConfigLoadingRules) bool {
	for _, p := range rules.Precedence {
		if _, err := os.Stat(p); err == nil {
			return false
		}
	}
	return true
}

func clients(cfg *rest.Config) (explain.Clients, error) {
	// explain reads every group API on the user's behalf; the API server's warnings
	// about one the user does not use (a deprecated PodGroup version) are noise.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return explain.Clients{}, errors.Join(errors.New("creating a Kubernetes client"), err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return explain.Clients{}, errors.Join(errors.New("creating a dynamic client"), err)
	}
	return explain.Clients{Kube: kube, Dynamic: dyn}, nil
}
