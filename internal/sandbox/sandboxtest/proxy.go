package sandboxtest

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Proxy is a TLS (HTTP/2) reverse proxy in front of the sandbox's API server, for
// injecting faults between a muster process and the API server: every request passes
// through a Hook that may delay it, hold it, or act before forwarding it. Requests
// keep their own credentials; the proxy adds none.
type Proxy struct {
	// URL and CAData are what a client connects to and trusts.
	URL    string
	CAData []byte

	srv     *httptest.Server
	forward http.Handler
	mu      sync.Mutex
	hook    Hook
	closed  chan struct{}
}

// Hook sees every request through a Proxy. It forwards a request by calling
// forward.ServeHTTP(w, r); one it does not forward never reaches the API server.
type Hook func(w http.ResponseWriter, r *http.Request, forward http.Handler)

// StartProxy starts a proxy in front of the sandbox's API server that forwards
// everything until SetHook says otherwise. It is closed when the test ends.
func (e *Env) StartProxy(t testing.TB) *Proxy {
	t.Helper()
	return StartProxyTo(t, e.Config)
}

// StartProxyTo starts a proxy in front of the API server that target reaches (only
// its host and TLS settings are used).
func StartProxyTo(t testing.TB, target *rest.Config) *Proxy {
	t.Helper()
	u, err := url.Parse(target.Host)
	if err != nil {
		t.Fatalf("proxy: parsing the API server's address %q: %v", target.Host, err)
	}
	tlsOnly := rest.CopyConfig(target)
	tlsOnly.BearerToken, tlsOnly.BearerTokenFile, tlsOnly.Impersonate = "", "", rest.ImpersonationConfig{}
	tlsConfig, err := rest.TLSConfigFor(tlsOnly)
	if err != nil {
		t.Fatalf("proxy: TLS settings for %s: %v", target.Host, err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = u.Host },
		Transport:     &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 100},
		FlushInterval: -1, // watches stream
		ErrorLog:      nil,
	}
	p := &Proxy{forward: rp, closed: make(chan struct{})}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	p.URL = p.srv.URL
	p.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	t.Cleanup(p.Close)
	return p
}

// SetHook makes hook see every request from now on; nil forwards everything.
func (p *Proxy) SetHook(hook Hook) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = hook
}

// Close releases every held request and stops the proxy.
func (p *Proxy) Close() {
	select {
	case <-p.closed:
		return
	default:
	}
	close(p.closed)
	p.srv.CloseClientConnections()
	p.srv.Close()
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	hook := p.hook
	p.mu.Unlock()
	if hook == nil {
		p.forward.ServeHTTP(w, r)
		return
	}
	hook(w, r, p.forward)
}

// Hold never forwards r: it answers when the client gives up (a killed process's
// connection closes) or the proxy closes, as a request lost with the process that
// sent it. Call it from a Hook.
func (p *Proxy) Hold(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-p.closed:
	}
	http.Error(w, "held by the test proxy", http.StatusServiceUnavailable)
}

// BindingOf returns the namespace, pod and node of a request that binds a pod (POST
// .../pods/NAME/binding, JSON or protobuf), leaving the body readable; ok is false
// for any other request.
func BindingOf(r *http.Request) (ns, pod, node string, ok bool) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/binding") {
		return "", "", "", false
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return "", "", "", false
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	b, isBinding := obj.(*corev1.Binding)
	if err != nil || !isBinding {
		return "", "", "", false
	}
	return b.Namespace, b.Name, b.Target.Name, true
}

// PodDeleteOf returns the namespace and name of a request that deletes one pod; ok
// is false for any other request.
func PodDeleteOf(r *http.Request) (ns, pod string, ok bool) {
	if r.Method != http.MethodDelete {
		return "", "", false
	}
	// /api/v1/namespaces/NS/pods/NAME
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 6 || parts[0] != "api" || parts[2] != "namespaces" || parts[4] != "pods" {
		return "", "", false
	}
	return parts[3], parts[5], true
}

// String describes the proxy.
func (p *Proxy) String() string { return fmt.Sprintf("proxy %s", p.URL) }
