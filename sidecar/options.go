package sidecar

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/token"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

// Options configures New. Zero values are documented defaults.
type Options struct {
	// Mirror records into the local tier and checkpoints. Required. Its
	// Options.Positions must be Positions below for PUT /v1/positions.
	Mirror *mirror.Mirror
	// Local is the Mirror's local tier, served as GET /v1/coverage.
	// Required.
	Local *local.Store
	// Durable is the durable tier: GET /v1/gaps and the raw coverage
	// positions are resolved against. Required. It must be the Mirror's
	// Options.Durable: POST /v1/states records through the Mirror, whose
	// checkpoints ship the states there.
	Durable durable.Tier
	// Positions is the durable position store GET /v1/positions reads.
	// Zero value: none; then no source may be declared stored.
	Positions coverage.PositionStore
	// Sources declares each source's regime: PUT and GET /v1/positions
	// answer 409 for a broker-managed source and 404 for an undeclared one.
	// Zero value: none declared.
	Sources []coverage.Source
	// Reference is raw's sink name. Zero value: coverage.RawSink.
	Reference string
	// Starts are the streams' declared first batch ids by topic: an extent
	// given without a start (acked_end without acked_start, or a JSON
	// extent without "start") takes its topic's. Zero value: every stream
	// starts at batch 0.
	Starts map[string]uint64
	// Sinks are the sinks the pipeline writes every topic to
	// (recovery.PlanOptions.Sinks), for /v1/gaps and /v1/plan requests that
	// name none (sinks=): the sinks with rows of a topic are always
	// planned, but a topic no sink has rows of (lost on every destination,
	// known from its extent) gets its sinks' replay only if they are named.
	// Zero value: only the sinks with rows.
	Sinks []string
	// TopicSinks are the sinks the pipeline writes each of its keys to, in
	// place of Sinks for that topic (recovery.PlanOptions.TopicSinks; an
	// empty list names none for its topic), for requests that name neither
	// sinks= nor topic-sinks=. Zero value: Sinks for every topic.
	TopicSinks map[string][]string
	// Extents holds the source extents reported with PUT /v1/extents,
	// which GET and POST /v1/gaps and /v1/plan widen every request's by;
	// share it with the coverage map and the gap metrics so they look for
	// raw's holes over the same extents. Zero value: a fresh
	// NewExtentBook(0).
	Extents *ExtentBook
	// MaxBodyBytes bounds a request body; a larger one is refused with 413
	// and nothing is recorded. Zero value: DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ReadTimeout and WriteTimeout bound reading a whole request and
	// writing its response. Zero values: 30s and 60s (a checkpoint or a
	// gaps query reads the table).
	ReadTimeout, WriteTimeout time.Duration
	// ReadHeaderTimeout bounds reading a request's headers. Zero value: 10s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long. Zero value:
	// 2m.
	IdleTimeout time.Duration
	// Extra mounts more handlers by http.ServeMux pattern, for instance
	// "GET /v1/map" or "GET /{$}" (use "{$}" for the root alone: "GET /"
	// would take every unknown GET route from the JSON 404). A pattern
	// conflicting with the sidecar's own routes makes New fail. Zero value:
	// none.
	Extra map[string]http.Handler
	// Token, when set, is the bearer token every request over TCP must
	// carry as "Authorization: Bearer TOKEN" (compared in constant time),
	// but the GET and HEAD of PublicPaths; at least MinTokenLength visible
	// ASCII characters (ReadTokenFile reads one). Never logged. Zero value:
	// none, and then only a loopback listener is safe (ListenTCP).
	Token string
	// AllowedHosts are the names, besides localhost and IP literals, that
	// a request's Host header may give over TCP (a Service's DNS name, the
	// --addr host): any other is refused with 421, so that a page whose
	// name an attacker rebinds to this address cannot reach it. Zero
	// value: none.
	AllowedHosts []string
	// PublicPaths are exact URL paths whose GET and HEAD need no Token:
	// pages that hold no data and ask for the token themselves (serve: "/",
	// the coverage map's shell). Host and Origin are checked on them as
	// everywhere. Zero value: none.
	PublicPaths []string
	// Logger receives request failures and shutdown. Zero value: discard.
	Logger *slog.Logger
}

// MinTokenLength is the shortest Options.Token accepted.
const MinTokenLength = token.MinLength

// DefaultMaxBodyBytes is Options.MaxBodyBytes' zero value: 8 MiB.
const DefaultMaxBodyBytes = 8 << 20

// EnsureDefaults fills in zero values.
func (o *Options) EnsureDefaults() {
	if o.Reference == "" {
		o.Reference = coverage.RawSink
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Extents == nil {
		o.Extents = NewExtentBook(0)
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 30 * time.Second
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 60 * time.Second
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports unusable options.
func (o *Options) Validate() error {
	switch {
	case o.Mirror == nil:
		return errors.New("sidecar: Options.Mirror is nil: open one with mirror.New")
	case o.Local == nil:
		return errors.New("sidecar: Options.Local is nil: pass the Mirror's local tier")
	case o.Durable == nil:
		return errors.New("sidecar: Options.Durable is nil: open the durable tier (iceberg.Open, object.Open)")
	case o.MaxBodyBytes < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.ReadHeaderTimeout < 0 || o.IdleTimeout < 0:
		return errors.New("sidecar: Options.MaxBodyBytes and the timeouts must not be negative")
	}
	if err := checkToken(o.Token); o.Token != "" && err != nil {
		return fmt.Errorf("sidecar: Options.Token: %w", err)
	}
	for _, h := range o.AllowedHosts {
		if h == "" || strings.ContainsAny(h, ":/[] ") {
			return fmt.Errorf("sidecar: Options.AllowedHosts: %q is not a host name (give the name alone, without port or scheme)", h)
		}
	}
	if err := coverage.ValidateNamedSinks(o.Sinks, o.TopicSinks); err != nil {
		return fmt.Errorf("sidecar: Options.Sinks or TopicSinks: %w", err)
	}
	if _, err := coverage.SourceRegimes(o.Sources); err != nil {
		return fmt.Errorf("sidecar: Options.Sources: %w", err)
	}
	for _, s := range o.Sources {
		if s.Name == "." || s.Name == ".." {
			// A URL path cleans these away: /v1/positions/.. is /v1/, and
			// no client could address the source's positions.
			return fmt.Errorf("sidecar: source %q: the names \".\" and \"..\" cannot be a URL path segment of /v1/positions/{source}: rename the source", s.Name)
		}
		if s.Regime == coverage.Stored && o.Positions == nil {
			return fmt.Errorf("sidecar: source %q is stored but Options.Positions is nil: open the positions table with iceberg.OpenPositions", s.Name)
		}
	}
	for pattern, h := range o.Extra {
		if h == nil {
			return fmt.Errorf("sidecar: Options.Extra[%q] is nil", pattern)
		}
	}
	return nil
}
