package visibility

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/muster-sched/muster/internal/engine"
	"github.com/muster-sched/muster/internal/explain"
)

// serveResource answers GET .../namespaces/NS/explanations/NAME?source=SOURCE. The
// request was authenticated and authorized (get explanations in NS) before it gets
// here; everything else under the version is NotFound or MethodNotSupported.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request) {
	info, ok := request.RequestInfoFrom(r.Context())
	switch {
	case !ok || !info.IsResourceRequest || info.Resource != explain.ExplanationsResource || info.Subresource != "":
		writeStatus(w, apierrors.NewNotFound(explain.ExplanationsGroupResource, r.URL.Path))
		return
	case info.Verb != "get" || info.Name == "" || info.Namespace == "":
		writeStatus(w, apierrors.NewMethodNotSupported(explain.ExplanationsGroupResource, info.Verb))
		return
	}
	source := engine.Source(r.URL.Query().Get("source"))
	if !knownSource(source) {
		writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("source %q: expected one of %s, %s, %s, %s or none",
			source, engine.Coscheduling, engine.Volcano, engine.Native, engine.Labels)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), answerTimeout)
	defer cancel()
	e, err := explain.Explain(ctx, explain.NewCacheReader(s.opts.Reader, s.opts.Mapper), info.Namespace, info.Name, source, s.opts.SchedulerNames, s.opts.Clock.Now())
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); !ok {
			s.opts.Log.Error(err, "explaining a group", "namespace", info.Namespace, "group", info.Name)
			err = apierrors.NewInternalError(err)
		}
		writeStatus(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// knownSource reports whether s names a group API, or none.
func knownSource(s engine.Source) bool {
	switch s {
	case "", engine.Coscheduling, engine.Volcano, engine.Native, engine.Labels:
		return true
	}
	return false
}

// jsonHandler answers every request with v (a discovery document).
func jsonHandler(v any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, v) })
}

// writeStatus writes err as a metav1.Status, as the API server does.
func writeStatus(w http.ResponseWriter, err error) {
	status := apierrors.NewInternalError(err).ErrStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s.Status()
	}
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(status.Code), status)
}

// writeJSON writes v as JSON with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
