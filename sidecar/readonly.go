package sidecar

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/covmirror/covmirror/internal/redact"
)

// ReadOnlyOptions configures NewReadOnly: the pod's metrics listener, which
// serves /healthz, /readyz and /metrics and nothing else. It has no route
// that writes: every method but GET and HEAD is 405, so whoever holds its
// token (Prometheus) or reaches it (the kubelet) can read the pod's state
// and never record coverage.
type ReadOnlyOptions struct {
	// Metrics serves GET /metrics. Required.
	Metrics http.Handler
	// Live is /healthz: nil or a nil error is 200, an error 503 with it in
	// the body. Zero value: always 200 while the listener serves.
	Live func() error
	// Ready is /readyz: every failing reason, one line each (named first,
	// "local-tier: ..."); none is 200. Zero value: always 200.
	Ready func(ctx context.Context) []string
	// Token, when set, is the bearer token GET /metrics needs. It must not
	// be the record API's: a listener takes its own token, so that the
	// scraper's credential records nothing. /healthz and /readyz never need
	// it: a kubelet probe cannot send a token from a file, and they hold no
	// data. Zero value: none.
	Token string
	// AllowedHosts are the names, besides localhost and IP literals, that a
	// request's Host may give (as Options.AllowedHosts); with a Token,
	// /metrics takes any Host. Zero value: none.
	AllowedHosts []string
	// Logger receives serving failures. Zero value: discard.
	Logger *slog.Logger
}

// EnsureDefaults fills in zero values.
func (o *ReadOnlyOptions) EnsureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Live == nil {
		o.Live = func() error { return nil }
	}
	if o.Ready == nil {
		o.Ready = func(context.Context) []string { return nil }
	}
}

// Validate reports unusable options.
func (o *ReadOnlyOptions) Validate() error {
	if o.Metrics == nil {
		return errors.New("sidecar: ReadOnlyOptions.Metrics is nil: pass the registry's handler")
	}
	if err := checkToken(o.Token); o.Token != "" && err != nil {
		return fmt.Errorf("sidecar: the metrics token: %w", err)
	}
	return nil
}

// ReadOnly is the metrics listener's server. Safe for concurrent use.
type ReadOnly struct {
	opts ReadOnlyOptions
	http *http.Server
}

// NewReadOnly returns the metrics listener's server.
func NewReadOnly(opts ReadOnlyOptions) (*ReadOnly, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &ReadOnly{opts: opts}
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, ErrorLog: errorLog(opts.Logger)}
	return s, nil
}

// ReadOnlyPaths are the metrics listener's paths.
var ReadOnlyPaths = []string{"/healthz", "/readyz", "/metrics"}

// Handler serves the three paths behind the read-only rules: the method
// (405), the path (404), the Host and Origin as the record API's guard
// checks them (421, 403), and the token on /metrics (401).
func (s *ReadOnly) Handler() http.Handler {
	var token [sha256.Size]byte
	if s.opts.Token != "" {
		token = sha256.Sum256([]byte(s.opts.Token))
	}
	allowed := map[string]bool{"localhost": true}
	for _, name := range s.opts.AllowedHosts {
		allowed[normalHost(name)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			plain(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %q: this listener is read-only (GET and HEAD of %s); the record API is on serve's --addr and --socket", r.Method, truncate(r.URL.Path), strings.Join(ReadOnlyPaths, ", ")))
			return
		}
		metrics := r.URL.Path == "/metrics"
		if !metrics && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			plain(w, http.StatusNotFound, fmt.Sprintf("no path %q: this listener serves %s", truncate(r.URL.Path), strings.Join(ReadOnlyPaths, ", ")))
			return
		}
		withToken := metrics && s.opts.Token != ""
		if host := hostName(r.Host); !withToken && (host == "" || !allowed[host] && net.ParseIP(host) == nil) {
			w.Header().Set("Connection", "close")
			plain(w, http.StatusMisdirectedRequest, fmt.Sprintf("Host %q is not a name of this server: use localhost or an IP address, or --allow-host NAME", truncate(r.Host)))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, "http://"+r.Host) {
			plain(w, http.StatusForbidden, "a page of another origin may not read this listener")
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			plain(w, http.StatusForbidden, "the browser says this request comes from another site")
			return
		}
		switch {
		case r.URL.Path == "/healthz":
			s.healthz(w, r)
		case r.URL.Path == "/readyz":
			s.readyz(w, r)
		case withToken && !validBearer(r.Header.Get("Authorization"), token):
			w.Header().Set("WWW-Authenticate", `Bearer realm="covmirror-metrics"`)
			plain(w, http.StatusUnauthorized, "/metrics needs \"Authorization: Bearer TOKEN\" with the token of serve's --metrics-token-file (not the record API's)")
		default:
			s.opts.Metrics.ServeHTTP(w, r)
		}
	})
}

func (s *ReadOnly) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Live(); err != nil {
		probeReply(w, r, http.StatusServiceUnavailable, []string{"local-tier: " + err.Error()})
		return
	}
	probeReply(w, r, http.StatusOK, nil)
}

func (s *ReadOnly) readyz(w http.ResponseWriter, r *http.Request) {
	reasons := s.opts.Ready(r.Context())
	code := http.StatusOK
	if len(reasons) > 0 {
		code = http.StatusServiceUnavailable
	}
	probeReply(w, r, code, reasons)
}

// probeAnswer is /healthz's and /readyz's JSON body.
type probeAnswer struct {
	Status  string   `json:"status"` // ok or failing
	Reasons []string `json:"reasons"`
}

// probeReply writes a probe's answer: plain text, "ok" or one failing reason
// a line, or JSON when the Accept header asks for it.
func probeReply(w http.ResponseWriter, r *http.Request, code int, reasons []string) {
	// A reason quotes a tier's error (a driver's DSN, a catalog's echo):
	// redacted as the API's 5xx answers are.
	reasons = slices.Clone(reasons)
	for i := range reasons {
		reasons[i] = redact.Text(reasons[i], false)
	}
	if wantsJSON(r.Header.Get("Accept")) {
		a := probeAnswer{Status: "ok", Reasons: reasons}
		if code != http.StatusOK {
			a.Status = "failing"
		}
		if a.Reasons == nil {
			a.Reasons = []string{}
		}
		writeJSON(w, code, a)
		return
	}
	if len(reasons) == 0 {
		plain(w, code, "ok")
		return
	}
	plain(w, code, strings.Join(reasons, "\n"))
}

// wantsJSON reports whether an Accept header names application/json.
func wantsJSON(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "application/json" {
			return true
		}
	}
	return false
}

func plain(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, text) // the client is gone if this fails
}

// Serve serves on ln until Shutdown; it returns nil after a Shutdown.
func (s *ReadOnly) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the listener, letting requests in flight finish until
// ctx is done.
func (s *ReadOnly) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Close closes the listener and every connection at once.
func (s *ReadOnly) Close() error { return s.http.Close() }
