package timeshift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Reading is what the endpoint answers: the clock's time and its offset from real
// time.
type Reading struct {
	Now    time.Time     `json:"now"`
	Offset time.Duration `json:"offset"`
}

// CheckLoopback returns an error unless addr is HOST:PORT with HOST a loopback IP
// address (127.0.0.0/8 or ::1). Names, "localhost" included, are refused: what they
// resolve to is not the endpoint's to trust.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: expected HOST:PORT with a loopback IP address: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: expected a loopback IP address (127.0.0.1 or ::1), found host %q", addr, host)
	}
	return nil
}

// Listen listens on addr, which must be a loopback address (see CheckLoopback).
func Listen(addr string) (net.Listener, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve serves c on ln until ctx is done:
//
//	GET  /now            the Reading
//	POST /advance?by=D   Advance by the Go duration D, then the Reading
//
// Requests from other than a loopback address are refused. An advance waits for the
// timers to settle (see Clock.Advance) while its request lasts, at most maxSettle.
func Serve(ctx context.Context, ln net.Listener, c *Clock) error {
	srv := &http.Server{Handler: Handler(c), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the test clock: %w", err)
	}
	return nil
}

// maxSettle bounds how long an advance waits for the timers to settle.
const maxSettle = time.Minute

// Handler returns the endpoint's handler (see Serve).
func Handler(c *Clock) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /now", func(w http.ResponseWriter, r *http.Request) {
		reply(w, c.Now(), c.Offset())
	})
	mux.HandleFunc("POST /advance", func(w http.ResponseWriter, r *http.Request) {
		by := r.URL.Query().Get("by")
		d, err := time.ParseDuration(by)
		if err != nil {
			http.Error(w, fmt.Sprintf("by=%q: expected a Go duration such as 30s: %v", by, err), http.StatusBadRequest)
			return
		}
		if d <= 0 {
			http.Error(w, fmt.Sprintf("by=%q: expected a positive duration (the clock only moves forward)", by), http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), maxSettle)
		defer cancel()
		now, err := c.Advance(ctx, d)
		if err != nil {
			http.Error(w, err.Error(), http.StatusGatewayTimeout)
			return
		}
		reply(w, now, c.Offset())
	})
	return loopbackOnly(mux)
}

// loopbackOnly refuses requests whose remote address is not a loopback address.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			http.Error(w, fmt.Sprintf("remote address %q: the test clock answers loopback clients only", r.RemoteAddr), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// reply writes a Reading.
func reply(w http.ResponseWriter, now time.Time, offset time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(Reading{Now: now, Offset: offset})
}

// Advance asks the endpoint at addr (HOST:PORT) to advance its clock by d, and returns
// its reading after the timers settled.
func Advance(ctx context.Context, addr string, d time.Duration) (Reading, error) {
	u := url.URL{Scheme: "http", Host: addr, Path: "/advance", RawQuery: url.Values{"by": {d.String()}}.Encode()}
	return call(ctx, http.MethodPost, u.String())
}

// Read returns the reading of the endpoint at addr.
func Read(ctx context.Context, addr string) (Reading, error) {
	u := url.URL{Scheme: "http", Host: addr, Path: "/now"}
	return call(ctx, http.MethodGet, u.String())
}

// call sends one request to the endpoint and decodes its Reading.
func call(ctx context.Context, method, u string) (Reading, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return Reading{}, fmt.Errorf("test clock: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Reading{}, fmt.Errorf("test clock: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return Reading{}, fmt.Errorf("test clock: %s %s: reading the answer: %w", method, u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Reading{}, fmt.Errorf("test clock: %s %s: %s: %s", method, u, resp.Status, body)
	}
	var r Reading
	if err := json.Unmarshal(body, &r); err != nil {
		return Reading{}, fmt.Errorf("test clock: %s %s: decoding %q: %w", method, u, body, err)
	}
	return r, nil
}
