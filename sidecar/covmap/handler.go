package covmap

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/covmirror/covmirror/internal/redact"
)

//go:embed page.html
var page string

// Handler serves the coverage map: GET / is the page (self-contained: no
// external resource), GET /v1/map its data. Mount it at a path ending in
// "/" (the page fetches "v1/map" relative to itself), beside the
// sidecar's routes: its plan links open "v1/plan" there.
//
// /v1/map parameters: sink and topic filter the aggregate and, when either
// is given, list the partitions' bars (the reference's bar always, since its
// holes are every sink's business); gaps=0 lists partitions without gaps or
// pending too (default: only those with some); offset pages through the
// partitions, MaxRows at a time. A failed read of the durable tier is a 503
// with {"error": ...}: the map never shows a failed read as "no gaps".
func Handler(opts Options) (http.Handler, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &server{opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /v1/map", s.serveMap)
	return mux, nil
}

type server struct {
	opts Options

	mu       sync.Mutex // one read of the table at a time
	cached   *Committed
	cachedAt time.Time
}

func (s *server) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// No page may load anything from elsewhere; inline code only.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'; form-action 'none'")
	_, _ = w.Write([]byte(page))
}

// committed is the durable tier, read at most once per CacheFor. Errors are
// never cached, nor is stale data served in their place.
func (s *server) committed(ctx context.Context) (*Committed, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if s.cached != nil && s.opts.CacheFor > 0 && now.Sub(s.cachedAt) < s.opts.CacheFor {
		return s.cached, s.cachedAt, nil
	}
	c, err := s.opts.Source.Committed(ctx)
	if err != nil {
		s.cached = nil
		return nil, time.Time{}, err
	}
	s.cached, s.cachedAt = &c, now
	return s.cached, now, nil
}

func (s *server) serveMap(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Timeout)
	defer cancel()
	c, readAt, err := s.committed(ctx)
	if err != nil {
		// A catalog's or a store's text, which may echo a credential.
		err = redact.Error(err)
		s.opts.Logger.Warn("covmap: reading the durable tier failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "reading the coverage table: " + err.Error()})
		return
	}
	var pending []Pending
	pendingErr := ""
	if s.opts.Pending != nil {
		if pending, err = s.opts.Pending.Pending(ctx); err != nil {
			s.opts.Logger.Warn("covmap: reading the local tier failed", "err", err)
			pendingErr = err.Error()
			pending = nil
		}
	}
	v := build(index(c, pending), c.Reference, q, &s.opts)
	v.GeneratedAt, v.ReadAt = s.opts.Now().UTC(), readAt.UTC()
	v.SnapshotID = strconv.FormatInt(c.SnapshotID, 10)
	if !c.CommittedAt.IsZero() {
		at := c.CommittedAt.UTC()
		v.CommittedAt = &at
	}
	v.Note, v.AgeNote = c.Note, ageNote
	v.PendingKnown, v.PendingError = s.opts.Pending != nil && pendingErr == "", pendingErr
	v.RefreshMs = s.opts.Refresh.Milliseconds()
	writeJSON(w, http.StatusOK, v)
}

func parseQuery(r *http.Request) (query, error) {
	v := r.URL.Query()
	// A name means its exact bytes: "orders " is its own topic, listed
	// under its own name, and trimming would show another one's partitions.
	q := query{sink: v.Get("sink"), topic: v.Get("topic"), onlyGaps: v.Get("gaps") != "0"}
	if o := v.Get("offset"); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 {
			return query{}, fmt.Errorf("offset %q is not a non-negative integer", o)
		}
		q.offset = n
	}
	return q, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
