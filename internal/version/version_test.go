package version

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/muster-sched/muster", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "k8s.io/api", Version: "v0.37.2"},
			{Path: "k8s.io/client-go", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/client-go", Version: "v0.37.2"}},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "e8bad92"}, {Key: "vcs.modified", Value: "true"}},
	}
	for _, tc := range []struct {
		name              string
		bi                *debug.BuildInfo
		ldVersion, commit string
		want              Info
	}{
		{"build info only", bi, "", "", Info{Version: "(devel)", Commit: "e8bad92-dirty", Kubernetes: "v1.37.2", Go: "go1.26.0"}},
		{"ldflags win", bi, "v0.3.0", "abc", Info{Version: "v0.3.0", Commit: "abc", Kubernetes: "v1.37.2", Go: "go1.26.0"}},
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.2.0"}}, "", "",
			Info{Version: "v0.2.0", Commit: "unknown", Kubernetes: "unknown", Go: "go1.26.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fromBuildInfo(tc.bi, tc.ldVersion, tc.commit)); diff != "" {
				t.Errorf("Info (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInstall checks both ways of asking on this test binary. It links no client-go, so
// its Kubernetes version is unknown; internal/image checks a real binary's.
func TestInstall(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		root := &cobra.Command{Use: "muster", RunE: func(*cobra.Command, []string) error { return nil }}
		Install(root)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		got := out.String()
		if want := "muster " + Get().String() + "\n"; got != want {
			t.Errorf("%v printed %q, want %q", args, got, want)
		}
		if !strings.HasPrefix(got, "muster version ") || !strings.Contains(got, ", commit ") || !strings.Contains(got, ", kubernetes ") {
			t.Errorf("%v printed %q, want \"muster version V, commit C, kubernetes K, GO\"", args, got)
		}
	}
}
