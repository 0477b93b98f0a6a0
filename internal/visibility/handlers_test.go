package visibility

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// TestRequestsItDoesNotAnswer: a request for something other than get of one
// explanation in a namespace, or with an unknown source, gets a Status naming what is
// wrong, before anything is read.
func TestRequestsItDoesNotAnswer(t *testing.T) {
	s := &Server{}
	for _, tc := range []struct {
		name   string
		info   *request.RequestInfo
		query  string
		code   int
		reason metav1.StatusReason
		says   string
	}{
		{"another resource", &request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "a", Name: "x"}, "", 404, metav1.StatusReasonNotFound, "not found"},
		{"a subresource", &request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "explanations", Subresource: "status", Namespace: "a", Name: "x"}, "", 404, metav1.StatusReasonNotFound, "not found"},
		{"a list", &request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "explanations", Namespace: "a"}, "", 405, metav1.StatusReasonMethodNotAllowed, "list"},
		{"cluster-wide", &request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "explanations", Name: "x"}, "", 405, metav1.StatusReasonMethodNotAllowed, "get"},
		{"an unknown source", &request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "explanations", Namespace: "a", Name: "x"}, "source=Slurm", 400, metav1.StatusReasonBadRequest, `source "Slurm": expected one of`},
		{"no request info", nil, "", 404, metav1.StatusReasonNotFound, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/apis/visibility.muster.dev/v1alpha1/x?"+tc.query, nil)
			if tc.info != nil {
				r = r.WithContext(request.WithRequestInfo(r.Context(), tc.info))
			}
			w := httptest.NewRecorder()
			s.serveResource(w, r)
			var st metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
				t.Fatalf("decoding the answer %q: %v", w.Body.String(), err)
			}
			if w.Code != tc.code || st.Reason != tc.reason || st.Kind != "Status" || !strings.Contains(st.Message, tc.says) {
				t.Errorf("got HTTP %d, %s %s %q; want HTTP %d, Status %s saying %q", w.Code, st.Kind, st.Reason, st.Message, tc.code, tc.reason, tc.says)
			}
		})
	}
}
