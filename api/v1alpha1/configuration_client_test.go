package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClientConnectionDefaults(t *testing.T) {
	got := DefaultConfiguration().ClientConnection
	want := ClientConnection{QPS: 1000, Burst: 2000, ContentType: ContentTypeProtobuf,
		AcceptContentTypes: ContentTypeProtobuf + "," + ContentTypeJSON}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default clientConnection (-want +got):\n%s", diff)
	}
}

func TestClientConnectionAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       ClientConnection
	}{
		{"every field", "clientConnection:\n  qps: 50\n  burst: 100\n  contentType: application/json\n  acceptContentTypes: application/json\n",
			ClientConnection{QPS: 50, Burst: 100, ContentType: ContentTypeJSON, AcceptContentTypes: ContentTypeJSON}},
		{"JSON accepts JSON only", "clientConnection:\n  contentType: application/json\n",
			ClientConnection{QPS: 1000, Burst: 2000, ContentType: ContentTypeJSON, AcceptContentTypes: ContentTypeJSON}},
		{"fractional qps, burst defaulted", "clientConnection:\n  qps: 2.5\n",
			ClientConnection{QPS: 2.5, Burst: 2000, ContentType: ContentTypeProtobuf,
				AcceptContentTypes: ContentTypeProtobuf + "," + ContentTypeJSON}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfiguration([]byte(header + tc.yaml))
			if err != nil {
				t.Fatalf("ParseConfiguration error: %v", err)
			}
			if diff := cmp.Diff(tc.want, c.ClientConnection); diff != "" {
				t.Errorf("clientConnection (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientConnectionRejects(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"negative qps", "clientConnection:\n  qps: -1\n", "clientConnection.qps: -1: must be > 0"},
		{"negative burst", "clientConnection:\n  burst: -5\n", "clientConnection.burst: -5: must be > 0"},
		{"burst below qps", "clientConnection:\n  qps: 100\n  burst: 10\n", "clientConnection.burst: 10: must be >= qps (100)"},
		{"unknown content type", "clientConnection:\n  contentType: application/yaml\n",
			`clientConnection.contentType: "application/yaml": expected "application/vnd.kubernetes.protobuf" or "application/json"`},
		{"unknown accepted type", "clientConnection:\n  acceptContentTypes: application/json,text/plain\n",
			`clientConnection.acceptContentTypes: "application/json,text/plain": expected a comma-separated list`},
		{"qps not a number", "clientConnection:\n  qps: fast\n", "clientConnection.qps"},
		{"kubeconfig is a flag", "clientConnection:\n  kubeconfig: /etc/kube\n", `unknown field "clientConnection.kubeconfig"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfiguration([]byte(header + tc.yaml))
			if err == nil {
				t.Fatalf("ParseConfiguration succeeded with %+v, want an error containing %q", got.ClientConnection, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}
