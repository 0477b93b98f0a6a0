package cli

import (
	"os"
	"path/filepath"
	"testing"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: dev
  context: {cluster: c, user: u, namespace: team-a}
- name: prod
  context: {cluster: c, user: u, namespace: team-b}
current-context: dev
`

// TestNamespaceComesFromTheContext: without -n the namespace is the kubeconfig context's
// (the current one, or --context's), not "default"; -n wins.
func TestNamespaceComesFromTheContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{nil, "team-a"},
		{[]string{"--context", "prod"}, "team-b"},
		{[]string{"--context", "prod", "-n", "mine"}, "mine"},
	}
	for _, tc := range tests {
		f := NewFlags()
		cmd := newGetGroupsCmd(f)
		f.AddTo(cmd)
		if err := cmd.ParseFlags(append([]string{"--kubeconfig", path}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		got, err := f.namespace()
		if err != nil || got != tc.want {
			t.Errorf("%v: namespace %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
}
