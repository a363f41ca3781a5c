package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/durable"
)

// DefaultSchema is the schema the tables live in when Options.Schema is
// empty.
const DefaultSchema = "covmirror"

// Options configures Open and OpenPositions. The zero value of every field
// but one of URL and Pool is a documented default; EnsureDefaults fills
// them in and Validate checks the result.
type Options struct {
	// URL is the server to connect to, as pgx parses it
	// ("postgres://user@host:5432/db?sslmode=disable", or key=value
	// pairs). The Tier opens a pool on it and closes it on Close. Give
	// exactly one of URL and Pool.
	URL string

	// Pool is a pool the caller opened and closes: the Tier uses it and
	// never closes it. Give exactly one of URL and Pool.
	Pool *pgxpool.Pool

	// Schema holds the tables: a plain identifier (a lowercase letter or
	// underscore, then lowercase letters, digits or underscores, at most
	// 63 bytes), always quoted in SQL. Zero value: DefaultSchema.
	Schema string

	// MaxAttempts bounds the tries of one transaction that PostgreSQL
	// aborted as a serialization failure (40001) or a deadlock (40P01),
	// which roll back and are safe to run again. Any other error is
	// returned at once. Zero value: DefaultMaxAttempts.
	MaxAttempts int

	// MinBackoff and MaxBackoff bound the wait before the next attempt: a
	// random time (full jitter) below MinBackoff doubled per attempt,
	// capped at MaxBackoff. Zero values: DefaultMinBackoff and
	// DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration

	// Logger receives the tier's few log lines (a transaction being
	// retried). Zero value: discard.
	Logger *slog.Logger

	// Now is the clock that stamps last writes and checkpoints, for tests.
	// Zero value: time.Now.
	Now func() time.Time

	// FoldEvery is how many Appends of this Tier pass between folds: every
	// FoldEvery-th Append, once it has committed, folds the destinations
	// this Tier appended to since its last fold that hold more than
	// FoldRows rows, each into one row (see Fold), in one statement that
	// reads only their rows. It never folds the whole table; an operator
	// or compaction job calls Fold for that. Zero value: DefaultFoldEvery.
	// Negative: never fold from Append.
	FoldEvery int

	// FoldRows is how many rows a destination may hold before Append's
	// fold merges them: a destination with more is folded, one with
	// FoldRows or fewer is left for later, so a fold rewrites rows only
	// where reads would merge many. At least 1. Zero value:
	// DefaultFoldRows.
	FoldRows int

	// NameRetention is how long checkpoint names are kept: each Append
	// deletes up to PruneBatch of its writer's names committed more than
	// NameRetention before it (by this Tier's clock, Now), and Fold of the
	// whole table deletes every writer's. Landed is exact for a name
	// younger than that; an older name may be gone, and appending it again
	// is a duplicate union, which changes no coverage. Zero value:
	// DefaultNameRetention. Negative: keep every name (the table grows by
	// a row per checkpoint).
	NameRetention time.Duration

	// Layout is how Append writes a checkpoint: LayoutRows (a row per
	// destination in the coverage table) or LayoutDeltas (one row per
	// checkpoint in the blobs table, which FoldDeltas merges into bases).
	// Reads return the union of both whatever this says, so a deployment
	// changes it pod by pod without a stop. Zero value: LayoutRows.
	Layout Layout
}

// Layout is how a Tier writes checkpoints; every Tier reads both.
type Layout string

const (
	// LayoutRows writes a row per destination per checkpoint, folded by
	// destination (FoldEvery). Nothing else to run; right up to a few
	// hundred pods at a 10 s interval (docs/scale.md).
	LayoutRows Layout = "rows"

	// LayoutDeltas writes each checkpoint as one row of the blobs table,
	// an object of the object tier's deltas layout (object.LayoutDeltas),
	// of the size of what it carries; the fleet role's fold job
	// (FoldDeltas) merges them into bases, one per topic and group of
	// object.GroupSize partitions. Right for a fleet at a short interval.
	LayoutDeltas Layout = "deltas"
)

// DefaultFoldEvery is Options.FoldEvery's zero value: a checkpoint is one
// INSERT, and every eighth of a Tier's also folds the destinations the
// last eight wrote, so reads merge few rows per destination.
const DefaultFoldEvery = 8

// DefaultFoldRows is Options.FoldRows' zero value: a destination a pod
// writes at every checkpoint gains eight rows between two of its folds,
// and is folded at each; one written now and then waits until it has
// five.
const DefaultFoldRows = 4

// DefaultNameRetention is Options.NameRetention's zero value, the window
// in which an append of unknown outcome is found by name: the same as the
// Iceberg tier's (durable.DefaultExpireOlderThan). At 500 pods
// checkpointing every second it keeps about 450,000 names.
const DefaultNameRetention = durable.DefaultExpireOlderThan

// PruneBatch is how many expired names one Append deletes at most (one
// statement, batched with the name's insert), and the size of each of
// Fold's deletes: a writer adds one name per Append, so its backlog
// shrinks by up to PruneBatch-1 per Append, and no statement holds many
// row locks.
const PruneBatch = 256

// FoldRowsInTx is how many rows a destination may hold before RecordInTx
// folds it in the caller's transaction: a writer that only ever records in
// its own transactions keeps its destinations folded too.
const FoldRowsInTx = 32

// Options' retry defaults.
const (
	DefaultMaxAttempts = 10
	DefaultMinBackoff  = 5 * time.Millisecond
	DefaultMaxBackoff  = time.Second
)

// EnsureDefaults fills in the zero-valued fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FoldEvery == 0 {
		o.FoldEvery = DefaultFoldEvery
	}
	if o.FoldRows == 0 {
		o.FoldRows = DefaultFoldRows
	}
	if o.NameRetention == 0 {
		o.NameRetention = DefaultNameRetention
	}
	if o.Layout == "" {
		o.Layout = LayoutRows
	}
}

// Validate reports options Open cannot work with.
func (o *Options) Validate() error {
	if (o.URL == "") == (o.Pool == nil) {
		return errors.New("postgres: give exactly one of Options.URL and Options.Pool")
	}
	if err := ValidateSchema(o.Schema); err != nil {
		return err
	}
	if o.MaxAttempts < 1 {
		return fmt.Errorf("postgres: Options.MaxAttempts is %d: it must be positive", o.MaxAttempts)
	}
	if o.MinBackoff < 0 || o.MaxBackoff < o.MinBackoff {
		return fmt.Errorf("postgres: Options.MinBackoff %v and MaxBackoff %v: need 0 <= MinBackoff <= MaxBackoff", o.MinBackoff, o.MaxBackoff)
	}
	if o.FoldRows < 1 {
		return fmt.Errorf("postgres: Options.FoldRows is %d: it must be at least 1 (fold a destination once it has more rows than that)", o.FoldRows)
	}
	if o.Layout != LayoutRows && o.Layout != LayoutDeltas {
		return fmt.Errorf("postgres: Options.Layout %q: want %q (a row per destination) or %q (a row per checkpoint, folded by the fleet role)", o.Layout, LayoutRows, LayoutDeltas)
	}
	return nil
}

var plainIdentifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidateSchema reports a schema name that is not a plain identifier. The
// name is quoted in SQL anyway; the rule keeps it one that needs no
// quoting by hand in psql, and so one an operator can type.
func ValidateSchema(schema string) error {
	if !plainIdentifier.MatchString(schema) {
		return fmt.Errorf("postgres: schema %q is not a plain identifier (a lowercase letter or underscore, then lowercase letters, digits or underscores, at most 63 bytes)", schema)
	}
	return nil
}
