package sidecar

// The recovery routes: the committed gaps, the plan and the committed
// coverage, each looking for raw's holes over the source's acked extents
// the request gives and the pod was told (PUT /v1/extents), so that a
// pipeline in any language runs the recovery loop without the CLI.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/recovery"
)

// methods answers 405 unless r's method is one of allowed (GET allows
// HEAD); it reports whether r may go on.
func (s *Server) methods(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	if slices.Contains(allowed, r.Method) || r.Method == http.MethodHead && slices.Contains(allowed, http.MethodGet) {
		return true
	}
	allow := strings.Join(allowed, ", ")
	if slices.Contains(allowed, http.MethodGet) {
		allow = strings.Replace(allow, http.MethodGet, "GET, HEAD", 1)
	}
	w.Header().Set("Allow", allow)
	s.fail(w, r, http.StatusMethodNotAllowed, apiError{Error: fmt.Sprintf("%s %s: method not allowed; use %s", r.Method, r.URL.Path, allow), Rule: "method"})
	return false
}

// bodyExtents reads a JSON array of extents, as --acked-ends takes it, an
// extent without "start" taking its topic's declared start.
func (s *Server) bodyExtents(w http.ResponseWriter, r *http.Request) ([]coverage.Extent, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			s.fail(w, r, http.StatusUnsupportedMediaType, apiError{Error: fmt.Sprintf("Content-Type %q: send application/json, an array of {\"topic\",\"partition\",\"start\",\"end\"}", ct), Rule: "content-type"})
			return nil, false
		}
	}
	es, err := coverage.ParseExtentsStarting(r.Body, s.opts.Starts)
	switch {
	case errors.Is(err, coverage.ErrInvalidExtent):
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "invalid-extent"})
		return nil, false
	case err != nil:
		ee := readError(err)
		s.fail(w, r, ruleStatus(ee.rule), apiError{Error: ee.Error(), Rule: ee.rule})
		return nil, false
	}
	return es, true
}

// requestExtents are the extents a request gives, widened by the book's:
// a POST's body, or for one partition the query's acked_end (with topic,
// partition and optionally acked_start; without it the topic's declared
// start).
func (s *Server) requestExtents(w http.ResponseWriter, r *http.Request, q url.Values) ([]coverage.Extent, bool) {
	end, start := q.Get("acked_end"), q.Get("acked_start")
	var es []coverage.Extent
	switch {
	case r.Method == http.MethodPost:
		if end != "" || start != "" {
			s.fail(w, r, http.StatusBadRequest, apiError{Error: "acked_end and acked_start with a POST body: give the extents in the body or, with GET, in the query, not both", Rule: "query"})
			return nil, false
		}
		var ok bool
		if es, ok = s.bodyExtents(w, r); !ok {
			return nil, false
		}
	case end != "":
		e := coverage.Extent{Topic: q.Get("topic"), Start: s.opts.Starts[q.Get("topic")]}
		var err error
		if q.Get("topic") == "" || q.Get("partition") == "" {
			err = errors.New("acked_end needs topic= and partition=: it is one partition's extent (POST a JSON array for many)")
		} else if e.Partition, err = parsePartition(q.Get("partition")); err == nil {
			if e.End, err = parseBatchID("acked_end", end); err == nil && start != "" {
				e.Start, err = parseBatchID("acked_start", start)
			}
		}
		if err == nil {
			es, err = coverage.ValidateExtents([]coverage.Extent{e})
		}
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "invalid-extent"})
			return nil, false
		}
	case start != "":
		s.fail(w, r, http.StatusBadRequest, apiError{Error: "acked_start without acked_end: give the extent's end, the first batch id the source has not acked", Rule: "invalid-extent"})
		return nil, false
	}
	return s.opts.Extents.With(es), true
}

// parseBatchID reads a query parameter's batch id: digits only.
func parseBatchID(name, v string) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || v[0] < '0' || v[0] > '9' {
		return 0, fmt.Errorf("%s %q is not a batch id (digits only, 0 to %d)", name, v, uint64(coverage.MaxBatchEnd))
	}
	return n, nil
}

// querySinks reads sinks=a,b and topic-sinks=TOPIC=a,b (repeatable, one
// topic each): the named sinks (recovery.PlanOptions.Sinks and
// TopicSinks). A request naming either replaces the server's pair
// (Options.Sinks and TopicSinks); without both, the server's pair applies.
func querySinks(q url.Values, def []string, defTopics map[string][]string) ([]string, map[string][]string, error) {
	if !q.Has("sinks") && !q.Has("topic-sinks") {
		return def, defTopics, nil
	}
	var out []string
	if q.Has("sinks") {
		for _, v := range strings.Split(q.Get("sinks"), ",") {
			d := coverage.Destination{Sink: v, Topic: "t"} // exact bytes: " lake" is its own sink
			if err := d.Validate(); err != nil {
				return nil, nil, fmt.Errorf("sinks=%q: %w: give sink names separated by commas", truncate(q.Get("sinks")), err)
			}
			out = append(out, d.Sink)
		}
	}
	var perTopic map[string][]string
	for _, v := range q["topic-sinks"] {
		if perTopic == nil {
			perTopic = map[string][]string{}
		}
		if err := coverage.AddTopicSinks(perTopic, v); err != nil {
			return nil, nil, fmt.Errorf("topic-sinks=%q: %w", truncate(v), err)
		}
	}
	return out, perTopic, nil
}

// recoveryQuery reads what /v1/gaps and /v1/plan share: the query, the
// filter (reference, sink, topic, partition) and the extents.
func (s *Server) recoveryQuery(w http.ResponseWriter, r *http.Request) (url.Values, recovery.GapsFilter, bool) {
	if !s.methods(w, r, http.MethodGet, http.MethodPost) {
		return nil, recovery.GapsFilter{}, false
	}
	q, ok := s.query(w, r)
	if !ok {
		return nil, recovery.GapsFilter{}, false
	}
	part, err := queryPartition(q.Get("partition"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "partition"})
		return nil, recovery.GapsFilter{}, false
	}
	f := recovery.GapsFilter{Reference: cmp.Or(q.Get("reference"), s.opts.Reference), Sink: q.Get("sink"), Topic: q.Get("topic"), Partition: part}
	if f.Sinks, f.TopicSinks, err = querySinks(q, s.opts.Sinks, s.opts.TopicSinks); err != nil {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "query"})
		return nil, recovery.GapsFilter{}, false
	}
	if f.Extents, ok = s.requestExtents(w, r, q); !ok {
		return nil, recovery.GapsFilter{}, false
	}
	return q, f, true
}

// gaps is GET|POST /v1/gaps: the committed gaps, as `covmirror gaps
// --json`.
func (s *Server) gaps(w http.ResponseWriter, r *http.Request) {
	q, f, ok := s.recoveryQuery(w, r)
	if !ok {
		return
	}
	switch v := q.Get("all"); v {
	case "", "0", "false":
	case "1", "true":
		f.All = true // waived gaps too
	default:
		s.fail(w, r, http.StatusBadRequest, apiError{Error: fmt.Sprintf("all=%q: want 1 or 0", truncate(v)), Rule: "query"})
		return
	}
	gaps, err := recovery.CommittedGaps(r.Context(), s.opts.Durable, f)
	if s.planFailed(w, r, err) {
		return
	}
	writeJSON(w, http.StatusOK, gaps)
}

// planTruncatedHeader is set on a /v1/plan answer holding only max_tasks
// of the plan's tasks (taken in turn from every destination with work):
// recover those and ask again.
const planTruncatedHeader = "Covmirror-Plan-Truncated"

// plan is GET|POST /v1/plan: the recovery plan, as `covmirror plan
// --json`, filtered by sink, topic and partition.
func (s *Server) plan(w http.ResponseWriter, r *http.Request) {
	q, f, ok := s.recoveryQuery(w, r)
	if !ok {
		return
	}
	// Selected before it is cut to max_tasks (another topic's work must not
	// fill the plan of this one), and read by its selection only.
	opts := recovery.PlanOptions{Reference: f.Reference, Extents: f.Extents, Sinks: f.Sinks, TopicSinks: f.TopicSinks, Select: f.Filter()}
	for _, p := range []struct {
		name string
		set  func(n uint64)
		max  uint64
	}{
		{"max_batches", func(n uint64) { opts.MaxBatches = n }, coverage.MaxBatchEnd},
		{"max_tasks", func(n uint64) { opts.MaxTasks = int(n) }, recovery.DefaultMaxTasks},
	} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 || n > p.max || v[0] < '0' || v[0] > '9' {
			s.fail(w, r, http.StatusBadRequest, apiError{Error: fmt.Sprintf("%s %q: want an integer from 1 to %d", p.name, v, p.max), Rule: "query"})
			return
		}
		p.set(n)
	}
	tasks, err := recovery.Plan(r.Context(), s.opts.Durable, opts)
	if errors.Is(err, recovery.ErrPlanTruncated) {
		w.Header().Set(planTruncatedHeader, err.Error())
	} else if s.planFailed(w, r, err) {
		return
	}
	writeJSON(w, http.StatusOK, recovery.GapsOf(tasks, f))
}

// planFailed answers a failed plan: 404 for a reference without rows, 400
// for invalid extents, 503 for the durable tier. It reports whether it did.
func (s *Server) planFailed(w http.ResponseWriter, r *http.Request, err error) bool {
	var nre *recovery.NoReferenceError
	switch {
	case err == nil:
		return false
	case errors.As(err, &nre):
		s.fail(w, r, http.StatusNotFound, apiError{Error: fmt.Sprintf("reference %q has no rows in %s; it has rows of the sinks %s: pass reference= with the sink raw's coverage is recorded under", nre.Reference, s.opts.Durable.Name(), coverage.Names(nre.Sinks)), Rule: "no-reference"})
	case errors.Is(err, coverage.ErrInvalidExtent):
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "invalid-extent"})
	default:
		s.fail(w, r, http.StatusServiceUnavailable, apiError{Error: err.Error(), Rule: "durable-tier"})
	}
	return true
}

// committedRow is one merged covered range of GET /v1/committed, as
// `covmirror query coverage --json` gives it.
type committedRow struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
}

// committed is GET /v1/committed?sink=&topic=&partition=: the durable
// tier's committed coverage, by sink, topic, partition and start (GET
// /v1/coverage is this pod's local view).
func (s *Server) committed(w http.ResponseWriter, r *http.Request) {
	q, ok := s.query(w, r)
	if !ok {
		return
	}
	part, err := queryPartition(q.Get("partition"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "partition"})
		return
	}
	all, err := s.opts.Durable.Coverage(r.Context(), durable.Filter{Sink: q.Get("sink"), Topic: q.Get("topic"), Partition: part})
	if err != nil {
		s.fail(w, r, http.StatusServiceUnavailable, apiError{Error: err.Error(), Rule: "durable-tier"})
		return
	}
	rows := []committedRow{}
	for _, d := range slices.SortedFunc(maps.Keys(all), coverage.Destination.Compare) {
		for rg := range all[d].All() {
			rows = append(rows, committedRow{Sink: d.Sink, Topic: d.Topic, Partition: d.Partition, Start: rg.Start, End: rg.End})
		}
	}
	writeJSON(w, http.StatusOK, rows)
}
