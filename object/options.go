package object

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Options configures Open. The zero value of every field but Blobs is a
// documented default; EnsureDefaults fills them in and Validate checks
// the result.
type Options struct {
	// Blobs is where the sink objects live. Required.
	Blobs Blobs

	// Prefix is put before every key, so that several deployments can
	// share a bucket or directory: empty, or ending in "/" with no empty,
	// "." or ".." segment ("prod/coverage/"). Zero value: none, the sink
	// objects are under "sinks/".
	Prefix string

	// MaxAttempts bounds the conditional writes of one sink's object in
	// one Append: each lost race or write of unknown outcome re-reads,
	// re-merges and tries again. Past it Append returns the last error and
	// the caller keeps the checkpoint pending. Zero value:
	// DefaultMaxAttempts.
	MaxAttempts int

	// MinBackoff and MaxBackoff bound the wait before the next attempt: a
	// random time (full jitter) below MinBackoff doubled per attempt,
	// capped at MaxBackoff, so that writers racing on one sink's object
	// spread out. Zero values: DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration

	// Logger receives the store's few log lines (a write of unknown
	// outcome being reconciled). Zero value: discard.
	Logger *slog.Logger

	// Layout is how Append writes a checkpoint: LayoutSinkObjects (a
	// compare-and-swap on each sink's object) or LayoutDeltas (one
	// write-once object per checkpoint, which Fold merges into bases).
	// Reads see every layout whatever this says. Zero value:
	// LayoutSinkObjects.
	Layout Layout

	// Parallel bounds the requests one read or Fold has in flight at once.
	// Zero value: DefaultParallel.
	Parallel int

	// MaxFoldDeltas bounds the deltas one Fold reads, and so its memory;
	// the rest wait for the next. Zero value: DefaultMaxFoldDeltas.
	MaxFoldDeltas int

	// FoldCacheBases bounds the bases Fold keeps decoded, with their
	// versions, between one fold and the next, so that the fleet role's
	// folder, the only writer of bases, writes each under If-Match of its
	// last version without reading and decoding it again. A base another
	// writer changed since is refused and read again: the cache saves work
	// and never decides what lands. About 150 bytes a destination. Zero
	// value: DefaultFoldCacheBases; negative: no cache.
	FoldCacheBases int

	// NameRetention is how long a fold log, the names of the checkpoints
	// one Fold folded, is kept: how long after its fold Landed still finds
	// a checkpoint (past it, a retry of unknown outcome appends again,
	// which is a harmless union). Keep it well above the longest
	// checkpoint retry window. Zero value: DefaultNameRetention.
	NameRetention time.Duration

	// Now is the clock that stamps each destination's last write, for
	// tests. Zero value: time.Now.
	Now func() time.Time
}

// Options' defaults.
const (
	DefaultMaxAttempts = 64
	DefaultMinBackoff  = 2 * time.Millisecond
	DefaultMaxBackoff  = 250 * time.Millisecond

	DefaultParallel       = 16
	DefaultMaxFoldDeltas  = 4_000
	DefaultFoldCacheBases = 4_096
	DefaultNameRetention  = 15 * time.Minute
)

// EnsureDefaults fills in the zero-valued fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.Layout == "" {
		o.Layout = LayoutSinkObjects
	}
	if o.Parallel == 0 {
		o.Parallel = DefaultParallel
	}
	if o.MaxFoldDeltas == 0 {
		o.MaxFoldDeltas = DefaultMaxFoldDeltas
	}
	if o.FoldCacheBases == 0 {
		o.FoldCacheBases = DefaultFoldCacheBases
	}
	if o.NameRetention == 0 {
		o.NameRetention = DefaultNameRetention
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate reports options Open cannot work with.
func (o *Options) Validate() error {
	if o.Blobs == nil {
		return errors.New("object: Options.Blobs is nil: give the store to keep the sink objects in")
	}
	if o.Prefix != "" {
		if !strings.HasSuffix(o.Prefix, "/") || strings.HasPrefix(o.Prefix, "/") {
			return fmt.Errorf("object: Options.Prefix %q must end in \"/\" and not start with one", o.Prefix)
		}
		for _, seg := range strings.Split(strings.TrimSuffix(o.Prefix, "/"), "/") {
			if seg == "" || seg == "." || seg == ".." {
				return fmt.Errorf("object: Options.Prefix %q has an empty, \".\" or \"..\" segment", o.Prefix)
			}
		}
	}
	for _, dir := range reservedDirs {
		if strings.HasPrefix(o.Prefix, dir) {
			return fmt.Errorf("object: Options.Prefix %q begins with %q, where a Tier without a prefix keeps its objects: choose another first segment", o.Prefix, dir)
		}
	}
	if o.MaxAttempts < 1 {
		return fmt.Errorf("object: Options.MaxAttempts is %d: it must be positive", o.MaxAttempts)
	}
	if o.MinBackoff < 0 || o.MaxBackoff < o.MinBackoff {
		return fmt.Errorf("object: Options.MinBackoff %v and MaxBackoff %v: need 0 <= MinBackoff <= MaxBackoff", o.MinBackoff, o.MaxBackoff)
	}
	if o.Layout != LayoutSinkObjects && o.Layout != LayoutDeltas {
		return fmt.Errorf("object: Options.Layout %q: want %q or %q", o.Layout, LayoutSinkObjects, LayoutDeltas)
	}
	if o.Parallel < 1 || o.MaxFoldDeltas < 1 || o.NameRetention < 0 {
		return fmt.Errorf("object: Options.Parallel %d and MaxFoldDeltas %d must be positive, NameRetention %v not negative", o.Parallel, o.MaxFoldDeltas, o.NameRetention)
	}
	return nil
}
