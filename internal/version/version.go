// Package version says which muster a binary is: its version, the commit it was built
// from and the Kubernetes version of the client libraries it links. Release builds set
// the version and commit with -ldflags (see the Makefile); otherwise they come from the
// build information the Go toolchain records (module version, vcs.revision), and the
// Kubernetes version always does.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set with -ldflags "-X github.com/muster-sched/muster/internal/version.version=v0.3.0
// -X github.com/muster-sched/muster/internal/version.commit=abc123"; empty means the
// build information decides.
var (
	version string
	commit  string
)

// clientModule is the module whose version gives the Kubernetes version: client-go
// v0.X.Y is Kubernetes v1.X.Y.
const clientModule = "k8s.io/client-go"

// Info identifies a build.
type Info struct {
	// Version is the release (e.g. v0.3.0), or "(devel)" for a build of a work tree.
	Version string
	// Commit is the git commit, with "-dirty" when the tree had local changes, or
	// "unknown" when the build recorded none.
	Commit string
	// Kubernetes is the Kubernetes version of the linked client libraries (v1.37.2).
	Kubernetes string
	// Go is the Go toolchain that built the binary.
	Go string
}

// Get returns the Info of the running binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version, commit)
}

// fromBuildInfo computes an Info from bi (nil when the binary has none) and the values
// set by -ldflags, which win when set.
func fromBuildInfo(bi *debug.BuildInfo, ldVersion, ldCommit string) Info {
	info := Info{Version: ldVersion, Commit: ldCommit, Kubernetes: "unknown", Go: runtime.Version()}
	if bi == nil {
		return fill(info)
	}
	info.Go = bi.GoVersion
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	if info.Commit == "" {
		info.Commit = vcsCommit(bi.Settings)
	}
	for _, m := range bi.Deps {
		if m.Path != clientModule {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		info.Kubernetes = kubernetesVersion(m.Version)
	}
	return fill(info)
}

// fill names what is still unknown.
func fill(info Info) Info {
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// vcsCommit returns the recorded vcs.revision, with "-dirty" if vcs.modified is true.
func vcsCommit(settings []debug.BuildSetting) string {
	var rev, dirty string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// kubernetesVersion maps client-go's v0.X.Y to Kubernetes v1.X.Y; any other form is
// returned as it is.
func kubernetesVersion(clientGo string) string {
	if rest, ok := strings.CutPrefix(clientGo, "v0."); ok {
		return "v1." + rest
	}
	return clientGo
}

// String renders the Info on one line, as `muster version` and --version print it.
func (i Info) String() string {
	return fmt.Sprintf("version %s, commit %s, kubernetes %s, %s", i.Version, i.Commit, i.Kubernetes, i.Go)
}

// Install gives root a --version flag and a `version` subcommand, both printing
// "NAME version ..." for the running binary.
func Install(root *cobra.Command) {
	root.Version = Get().String()
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Kubernetes version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", root.Name(), Get())
			return err
		},
	})
}
