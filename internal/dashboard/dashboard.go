package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-sched/muster/internal/explain"
)

//go:embed assets
var assets embed.FS

// Options configures a dashboard.
type Options struct {
	// Reader reads the cluster: muster's informer cache, or one of the dashboard's own.
	Reader client.Reader
	// Mapper resolves kinds to resources for the explain walk (the controller-runtime
	// manager's RESTMapper); nil leaves workload kinds unresolved.
	Mapper meta.RESTMapper
	// SchedulerNames are the schedulerNames muster serves, its Configuration's
	// schedulerName first: pods with another are other schedulers'.
	SchedulerNames []string
	// Costs is where the cost page reads: the ledger the scheduler feeds in this
	// process, or the one muster keeps in its namespace (StoredCosts); nil shows none.
	Costs CostSource
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Poll is how often an open page fetches itself again; zero means 2s.
	Poll time.Duration
	// ReadTimeout bounds the reading of one page from the cache; zero means 10s.
	ReadTimeout time.Duration
}

// Dashboard is the dashboard's http.Handler.
type Dashboard struct {
	opts  Options
	pages map[string]*template.Template
	mux   *http.ServeMux
}

// New returns the dashboard, or an error naming a missing option.
func New(opts Options) (*Dashboard, error) {
	if opts.Reader == nil {
		return nil, errors.New("dashboard: Options.Reader: expected a cache reader, found nil")
	}
	if len(opts.SchedulerNames) == 0 || slices.Contains(opts.SchedulerNames, "") {
		return nil, fmt.Errorf("dashboard: Options.SchedulerNames: %q: expected muster's schedulerNames, none empty", opts.SchedulerNames)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 10 * time.Second
	}
	d := &Dashboard{opts: opts, pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	for _, page := range []string{"cluster", "queues", "group", "cost"} {
		t, err := template.New("base.html").Funcs(funcs).ParseFS(assets, "assets/base.html", "assets/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: parsing the %s page: %w", page, err)
		}
		d.pages[page] = t
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, fmt.Errorf("dashboard: assets: %w", err)
	}
	// The two assets sit beside the pages: behind the API server, a path one level
	// below the dashboard is authorized as get on it, a deeper one as a subresource.
	for _, asset := range []string{"style.css", "live.js"} {
		d.mux.Handle("GET /"+asset, http.FileServerFS(static))
	}
	d.mux.HandleFunc("GET /{$}", d.page("cluster", d.cluster))
	d.mux.HandleFunc("GET /queues", d.page("queues", d.queues))
	d.mux.HandleFunc("GET /group", d.page("group", d.group))
	d.mux.HandleFunc("GET /cost", d.page("cost", d.cost))
	return d, nil
}

// ServeHTTP serves the dashboard's pages and assets. Every page is one level below the
// dashboard's root and every link is relative, so that the dashboard works under any
// path: at a server's root, or behind the API server at the visibility API's path
// (whose proxy rewrites absolute paths in HTML to the backend's address).
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	d.mux.ServeHTTP(w, r)
}

// fragmentHeader, on a request, asks for the page's main region only: what the page's
// script fetches to update itself.
const fragmentHeader = "X-Muster-Fragment"

// view is what every page template gets.
type view struct {
	Title, Nav string
	Poll       int64
	Now        time.Time
	Data       any
}

// page returns the handler of one page: build reads the cache into the page's data,
// or fails with a status and a message.
func (d *Dashboard) page(name string, build func(ctx context.Context, r *http.Request, m *model) (title string, data any, status int, err error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d.opts.ReadTimeout)
		defer cancel()
		m, err := read(ctx, d.opts.Reader, d.opts.SchedulerNames)
		if err != nil {
			http.Error(w, "reading muster's cache: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		title, data, status, err := build(ctx, r, m)
		if err != nil {
			http.Error(w, err.Error(), status)
			return
		}
		v := view{Title: title, Nav: name, Poll: d.opts.Poll.Milliseconds(), Now: d.opts.Now(), Data: data}
		tmpl := "base.html"
		if r.Header.Get(fragmentHeader) != "" {
			tmpl = "content"
		}
		var b bytes.Buffer
		if err := d.pages[name].ExecuteTemplate(&b, tmpl, v); err != nil {
			http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b.Bytes())
	}
}

func (d *Dashboard) cluster(_ context.Context, _ *http.Request, m *model) (string, any, int, error) {
	return "Cluster", struct {
		Heat    Heat
		Legend  any
		Compact bool
	}{heat(m, d.opts.SchedulerNames), legend, len(m.nodes) > 48}, 0, nil
}

func (d *Dashboard) queues(_ context.Context, _ *http.Request, m *model) (string, any, int, error) {
	return "Queues", queueRows(m, d.opts.Now()), 0, nil
}

// groupPage is the group page's data.
type groupPage struct {
	Name, Source, Phase, Queue, Reason, Message, Waiting, RecordProblem string
	Timeline                                                            []Span
	Members                                                             []Member
	Report                                                              *explain.Report
	ExplainProblem                                                      string
}

func (d *Dashboard) group(ctx context.Context, r *http.Request, m *model) (string, any, int, error) {
	ref, problem := refOf(r.URL.Query())
	if problem != "" {
		return "", nil, http.StatusBadRequest, errors.New(problem)
	}
	g := m.groups[ref.Key()]
	if g == nil {
		return "", nil, http.StatusNotFound, fmt.Errorf("group %s: not found in muster's cache", ref.Key())
	}
	now := d.opts.Now()
	p := groupPage{Name: ref.Namespace + "/" + ref.Name, Source: string(ref.Source), RecordProblem: g.recordProblem,
		Timeline: timeline(g, now), Members: members(g)}
	if rec := g.record; rec != nil {
		p.Phase, p.Queue, p.Reason, p.Message, p.Waiting = rec.Phase, rec.Queue, rec.Reason, rec.Message, rec.Waiting
	}
	if target := explainTarget(ref); target != "" {
		f, err := explain.Gather(ctx, explain.NewCacheReader(d.opts.Reader, d.opts.Mapper), target, ref.Namespace, d.opts.SchedulerNames, now)
		if err != nil {
			p.ExplainProblem = err.Error()
		} else {
			report := explain.Build(f)
			p.Report = &report
		}
	}
	return "Group " + p.Name, p, 0, nil
}

// costPage is the cost page's data: one table per window.
type costPage struct {
	Measured bool
	Problem  string
	Windows  []costWindow
}

type costWindow struct {
	ID, Name string
	Costs    []Cost
}

func (d *Dashboard) cost(ctx context.Context, _ *http.Request, _ *model) (string, any, int, error) {
	p := costPage{Measured: d.opts.Costs != nil}
	if !p.Measured {
		return "Cost", p, 0, nil
	}
	now := d.opts.Now()
	for _, w := range []struct {
		id, name string
		d        time.Duration
	}{{"w-last-hour", "Last hour", time.Hour}, {"w-last-day", "Last day", 24 * time.Hour}} {
		costs, err := d.opts.Costs.Costs(ctx, now, w.d)
		if err != nil {
			p.Problem = err.Error()
			break
		}
		p.Windows = append(p.Windows, costWindow{w.id, w.name, costs})
	}
	return "Cost", p, 0, nil
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"seconds": func(v float64) string { return fmt.Sprintf("%.0f", v) },
	"hours":   func(v float64) string { return fmt.Sprintf("%.2f", v/3600) },
	"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"round":   func(d time.Duration) string { return d.Round(time.Second).String() },
	"pct":     func(v float64) string { return fmt.Sprintf("%.1f", v) },
}
