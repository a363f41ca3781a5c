package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/redact"
)

// Server is the record API of one pod. Safe for concurrent use.
type Server struct {
	opts     Options
	regimes  map[string]coverage.Regime
	counters *counters
	handler  http.Handler
	http     *http.Server

	draining atomic.Bool // set by Shutdown: writes answer 503
	gate     recordGate  // record requests inside Mirror.RecordBatch (gate.go)
}

// New returns a Server; Handler serves its API, Serve serves it on a
// listener.
func New(opts Options) (*Server, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	regimes, _ := coverage.SourceRegimes(opts.Sources) // validated
	s := &Server{opts: opts, regimes: regimes, counters: newCounters()}
	mux, err := s.routes()
	if err != nil {
		return nil, err
	}
	h := s.guard(mux, mux, map[string]string{"/v1/records": routeRecords, "/v1/checkpoint": routeCheckpoint, "/v1/release": routeRelease, "/v1/states": routeStates,
		"/v1/gaps": routeGaps, "/v1/plan": routePlan, "/v1/extents": routeExtents, "/v1/coverage": routeCoverage, "/": routeUnknown})
	s.handler = h
	s.http = &http.Server{
		Handler:           h,
		ConnContext:       connContext,
		ReadTimeout:       opts.ReadTimeout,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		ErrorLog:          errorLog(opts.Logger),
	}
	return s, nil
}

// Handler is the API: the sidecar's routes, Options.Extra, and a JSON 404
// for anything else, all behind the guard (guard.go). A request served
// through Handler rather than Serve is held to the TCP rules.
func (s *Server) Handler() http.Handler { return s.handler }

// Route names, as the metrics label them.
const (
	routeRecords    = "POST /v1/records"
	routeCheckpoint = "POST /v1/checkpoint"
	routeRelease    = "POST /v1/release"
	routeStates     = "POST /v1/states"
	routeGaps       = "GET /v1/gaps"
	routePlan       = "GET /v1/plan"
	routeCommitted  = "GET /v1/committed"
	routeExtents    = "PUT /v1/extents"
	routeCoverage   = "GET /v1/coverage"
	routePutPos     = "PUT /v1/positions"
	routeGetPos     = "GET /v1/positions"
	routeUnknown    = "unknown"
)

// routeMethods are the methods of the routes that take more than one, each
// labelled by the method it was called with (METHOD /path); any other
// method keeps the route's name, so a caller cannot mint labels.
var routeMethods = map[string][]string{
	routeGaps:    {http.MethodGet, http.MethodPost},
	routePlan:    {http.MethodGet, http.MethodPost},
	routeExtents: {http.MethodGet, http.MethodPut, http.MethodDelete},
}

// methodLabel is route name's metrics label for a request of method.
func methodLabel(name, method string) string {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if !slices.Contains(routeMethods[name], method) {
		return name
	}
	_, path, _ := strings.Cut(name, " ")
	return method + " " + path
}

// routes builds the mux. Routes are registered without a method and check
// it themselves, so that a wrong method is a JSON 405 rather than the mux's
// plain-text one.
func (s *Server) routes() (h *http.ServeMux, err error) {
	mux := http.NewServeMux()
	// ServeMux panics on a conflicting pattern; a bad Extra is an error.
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("sidecar: Options.Extra: %v", r)
		}
	}()
	mux.Handle("/v1/records", s.route(routeRecords, http.MethodPost, s.records))
	mux.Handle("/v1/checkpoint", s.route(routeCheckpoint, http.MethodPost, s.checkpoint))
	mux.Handle("/v1/release", s.route(routeRelease, http.MethodPost, s.release))
	mux.Handle("/v1/states", s.route(routeStates, http.MethodPost, s.states))
	// These three take GET and POST (or PUT) and check the method
	// themselves.
	mux.Handle("/v1/gaps", s.route(routeGaps, "", s.gaps))
	mux.Handle("/v1/plan", s.route(routePlan, "", s.plan))
	mux.Handle("/v1/extents", s.route(routeExtents, "", s.extentsRoute))
	mux.Handle("/v1/committed", s.route(routeCommitted, http.MethodGet, s.committed))
	mux.Handle("/v1/coverage", s.route(routeCoverage, http.MethodGet, s.opts.Local.Handler().ServeHTTP))
	mux.Handle("/v1/positions/{source}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			s.route(routePutPos, http.MethodPut, s.putPosition).ServeHTTP(w, r)
			return
		}
		s.route(routeGetPos, http.MethodGet, s.getPosition).ServeHTTP(w, r)
	}))
	for pattern, extra := range s.opts.Extra {
		mux.Handle(pattern, extra)
	}
	mux.Handle("/", s.route(routeUnknown, "", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, apiError{Error: fmt.Sprintf("no route %s %s: the API is POST /v1/records, POST /v1/checkpoint, POST /v1/release, POST /v1/states, GET and POST /v1/gaps and /v1/plan, GET /v1/committed, GET /v1/coverage, PUT, GET and DELETE /v1/extents, PUT and GET /v1/positions/{source}", r.Method, r.URL.Path), Rule: "route"})
	}))
	return mux, nil
}

// statusWriter remembers the status code for the requests counter.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

type routeKey struct{}

// route wraps a handler with the method check (method "" allows any), the
// body limit and the requests counter.
func (s *Server) route(name, method string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), routeKey{}, name))
		switch {
		case method == http.MethodGet && r.Method != http.MethodGet && r.Method != http.MethodHead,
			method != "" && method != http.MethodGet && r.Method != method:
			allow := method
			if method == http.MethodGet {
				allow = "GET, HEAD"
			}
			if name == routePutPos || name == routeGetPos {
				allow = "GET, HEAD, PUT"
			}
			sw.Header().Set("Allow", allow)
			s.fail(sw, r, http.StatusMethodNotAllowed, apiError{Error: fmt.Sprintf("%s %s: method not allowed; use %s", r.Method, r.URL.Path, allow), Rule: "method"})
		default:
			r.Body = http.MaxBytesReader(sw, r.Body, s.opts.MaxBodyBytes)
			h(sw, r)
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		label := methodLabel(name, r.Method)
		s.counters.requests.WithLabelValues(label, strconv.Itoa(sw.code)).Inc()
		s.counters.latency.WithLabelValues(label).Observe(time.Since(start).Seconds())
	})
}

// apiError is every error answer's JSON body.
type apiError struct {
	Error string `json:"error"`
	// Entry is the index of the offending record entry, when one is at
	// fault.
	Entry *int `json:"entry,omitempty"`
	// Rule names the rule broken, for programs: method, route, json,
	// unknown-field, type, missing-field, partition, uint64,
	// max-batch-end, invalid-destination, invalid-range, duplicate-field,
	// invalid-utf8, body-too-large, timeout and body-read (408: the body
	// timed out or broke off), query, content-type, shutting-down, local-tier, broker-managed,
	// unknown-source, invalid-position, no-reference, durable-tier,
	// invalid-extent, too-many-extents, and the guard's host (421), origin
	// (403) and token (401).
	Rule string `json:"rule,omitempty"`
	// Recorded, on a record request that failed midway, is how many
	// entries (from the first) are recorded: the caller must retry the
	// rest (re-recording is harmless: coverage is a union).
	Recorded *int `json:"recorded,omitempty"`
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, e apiError) {
	route, _ := r.Context().Value(routeKey{}).(string)
	if e.Rule != "" {
		s.counters.rejects.WithLabelValues(route, e.Rule).Inc()
	}
	if code >= 500 {
		// A tier's error: a catalog's or a store's text, which may echo
		// the request's credentials.
		e.Error = redact.Text(e.Error, false)
		s.opts.Logger.Warn("sidecar request failed", "route", route, "status", code, "err", e.Error)
	}
	writeJSON(w, code, e)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client is gone if this fails
}

// shuttingDown answers 503 to a write once Shutdown has begun; it reports
// whether it did.
func (s *Server) shuttingDown(w http.ResponseWriter, r *http.Request) bool {
	if !s.draining.Load() {
		return false
	}
	s.refuse(w, r, "shutting down")
	return true
}

// refuse answers 503 shutting-down with why.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, why string) {
	w.Header().Set("Connection", "close")
	s.fail(w, r, http.StatusServiceUnavailable, apiError{Error: why, Rule: "shutting-down"})
}

// Serve serves the API on ln until Shutdown; it returns nil after a
// Shutdown. Call it once per listener (TCP and a Unix socket, say).
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the API gracefully: from now on writes (records,
// positions, checkpoints) answer 503 "shutting down", listeners stop
// accepting, and requests in flight finish (until ctx is done). Then no
// record request may record any more: one that has not recorded yet by
// then answers 503, and Shutdown waits for those recording (recordGate).
// The caller then closes the Mirror, whose final checkpoint carries every
// record answered 200. A request still running when ctx is done is not
// cut off: it goes on, and a record request among them answers 503.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.opts.Logger.Info("sidecar shutting down: new writes get 503, requests in flight finish")
	err := s.http.Shutdown(ctx)
	if n := s.gate.close(recordDrainWait); n > 0 {
		s.opts.Logger.Warn("sidecar: record requests still recording after the shutdown window answer 503; the final checkpoint may not carry them",
			"requests", n, "waited", recordDrainWait)
	}
	return err
}
