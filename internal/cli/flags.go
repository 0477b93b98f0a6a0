package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/muster-sched/muster/internal/explain"
)

// Flags are the kubectl flags every command takes (k8s.io/cli-runtime): --kubeconfig,
// --context, --namespace/-n (default: the kubeconfig context's namespace), --as and
// the rest, plus -A and -o.
type Flags struct {
	Config        *genericclioptions.ConfigFlags
	AllNamespaces bool
	Output        string
}

// NewFlags returns the flags, to be added to a root command with AddTo.
func NewFlags() *Flags { return &Flags{Config: genericclioptions.NewConfigFlags(true)} }

// AddTo adds the kubectl flags to cmd's persistent flags.
func (f *Flags) AddTo(cmd *cobra.Command) { f.Config.AddFlags(cmd.PersistentFlags()) }

// addListFlags adds -A and -o to a listing command.
func (f *Flags) addListFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	cmd.Flags().StringVarP(&f.Output, "output", "o", "", "output format: wide, json or yaml (default: a table)")
}

// restConfig is the kubeconfig's client config, falling back to the sandbox's file when
// no kubeconfig is given or found.
func (f *Flags) restConfig() (*rest.Config, error) {
	if (f.Config.KubeConfig == nil || *f.Config.KubeConfig == "") && noKubeconfig() {
		if _, err := os.Stat(SandboxKubeconfig); err == nil {
			path := SandboxKubeconfig
			f.Config.KubeConfig = &path
		}
	}
	cfg, err := f.Config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// namespace is --namespace, or the kubeconfig context's namespace, or "default".
func (f *Flags) namespace() (string, error) {
	ns, _, err := f.Config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// listNamespace is the namespace to list in: "" with -A.
func (f *Flags) listNamespace() (string, error) {
	if f.AllNamespaces {
		return "", nil
	}
	return f.namespace()
}

// clients returns the clients commands read and write the cluster with.
func (f *Flags) clients() (explain.Clients, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return explain.Clients{}, err
	}
	return clients(cfg)
}

func noKubeconfig() bool {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if len(rules.ExplicitPath) > 0 {
		return false
	}
	for _, p := range rules.Precedence {
		if _, err := os.Stat(p); err == nil {
			return false
		}
	}
	return true
}

func clients(cfg *rest.Config) (explain.Clients, error) {
	// The commands read every group API on the user's behalf; the API server's warnings
	// about one the user does not use (a deprecated PodGroup version) are noise.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return explain.Clients{}, fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return explain.Clients{}, fmt.Errorf("creating a dynamic client: %w", err)
	}
	return explain.NewClients(kube, dyn), nil
}

// errOutput is returned for an -o value a command does not know.
var errOutput = errors.New("unknown output format")

// writeStructured writes v as JSON or YAML; it reports false for any other format.
func writeStructured(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case "json":
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, fmt.Errorf("encoding JSON: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return true, err
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return true, fmt.Errorf("encoding YAML: %w", err)
		}
		_, err = w.Write(data)
		return true, err
	case "", "wide":
		return false, nil
	}
	return true, fmt.Errorf("-o %q: %w: expected wide, json or yaml", format, errOutput)
}
