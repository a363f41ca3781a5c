package covmap

import (
	"errors"
	"log/slog"
	"time"
)

// Options configures Handler. The zero value of every field but Source is a
// documented default; EnsureDefaults fills them in and Validate checks the
// result.
type Options struct {
	// Source is the durable tier's committed coverage and gaps (a
	// TableSource over the coverage table). Required.
	Source Source
	// Pending is this pod's coverage recorded and not yet checkpointed (a
	// LocalPending over the pod's local tier). Zero value: none; the page
	// then says that pending ranges are not shown.
	Pending PendingSource
	// Refresh is how often the page reloads its data. Zero value: 10s.
	Refresh time.Duration
	// CacheFor is how long one read of Source serves further requests, so
	// that several open pages cost one table read per interval. Zero value:
	// 5s. Negative: every request reads the table.
	CacheFor time.Duration
	// Timeout bounds one read of the sources. Zero value: 30s.
	Timeout time.Duration
	// MaxRows caps the sinks and the topics of an aggregate and the
	// partitions of one detail response; the response says how many more
	// there are. Zero value: 200.
	MaxRows int
	// MaxRanges caps the ranges of one kind drawn on one bar; the response
	// says how many more there are. Zero value: 200.
	MaxRanges int
	// Logger receives failed reads. Zero value: discard.
	Logger *slog.Logger
	// Now is the clock, for ages. Zero value: time.Now.
	Now func() time.Time
}

// EnsureDefaults fills in the zero-valued fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Refresh == 0 {
		o.Refresh = 10 * time.Second
	}
	if o.CacheFor == 0 {
		o.CacheFor = 5 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxRows == 0 {
		o.MaxRows = 200
	}
	if o.MaxRanges == 0 {
		o.MaxRanges = 200
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate reports unusable options.
func (o *Options) Validate() error {
	switch {
	case o.Source == nil:
		return errors.New("covmap: Options.Source is nil: pass a TableSource over the coverage table")
	case o.Refresh < time.Second:
		return errors.New("covmap: Options.Refresh must be at least 1s (zero: 10s)")
	case o.Timeout < 0:
		return errors.New("covmap: Options.Timeout must not be negative (zero: 30s)")
	case o.MaxRows < 1 || o.MaxRanges < 1:
		return errors.New("covmap: Options.MaxRows and MaxRanges must be positive (zero: 200)")
	}
	return nil
}
