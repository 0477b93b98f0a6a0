package dashboard

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1alpha1 "github.com/muster-sched/muster/api/v1alpha1"
)

// noReader is a client.Reader that reads nothing: the pages below are rendered from
// models built in the test.
type noReader struct{}

func (noReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("no cluster in this test")
}

func (noReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("no cluster in this test")
}

// TestPagesRender renders each page, whole and as the fragment the script fetches,
// and checks that what a tenant wrote is escaped.
func TestPagesRender(t *testing.T) {
	d, err := New(Options{Reader: noReader{}, SchedulerNames: []string{"muster"}, Costs: NewLedger(), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	evil := `<script>alert(1)</script>`
	rec := musterv1alpha1.GroupLifecycle{Phase: "Queued", Queue: "q", Waiting: evil, WaitingKind: "QuotaExceeded"}
	m := modelOf([]corev1.Node{node("n1", 2, true)}, []corev1.Pod{withRecord(pod("ns", "a-0", "a", "", 1), rec)})
	for name, build := range map[string]func(context.Context, *http.Request, *model) (string, any, int, error){
		"cluster": d.cluster, "queues": d.queues, "cost": d.cost,
		"group": d.group,
	} {
		r := httptest.NewRequest("GET", "/group?source=Labels&namespace=ns&name=a", nil)
		title, data, _, err := build(context.Background(), r, m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, tmpl := range []string{"base.html", "content"} {
			var b bytes.Buffer
			if err := d.pages[name].ExecuteTemplate(&b, tmpl, view{Title: title, Nav: name, Poll: 2000, Now: t0, Data: data}); err != nil {
				t.Fatalf("%s %s: %v", name, tmpl, err)
			}
			if strings.Contains(b.String(), evil) {
				t.Errorf("%s %s: a tenant's text is not escaped", name, tmpl)
			}
			if tmpl == "base.html" && !strings.Contains(b.String(), `<main id="main"`) {
				t.Errorf("%s: no main landmark", name)
			}
		}
	}
}
