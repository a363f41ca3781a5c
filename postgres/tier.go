package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/backoff"
	"github.com/covmirror/covmirror/internal/redact"
	"github.com/covmirror/covmirror/object"
)

// Tier is the durable tier as PostgreSQL tables (see the package
// documentation). It is safe for concurrent use, and any number of Tiers,
// in any number of processes, may share one schema.
type Tier struct {
	opts     Options
	pool     *pgxpool.Pool
	ownsPool bool
	name     string
	coverage string // the quoted coverage table
	ckpts    string // the quoted checkpoints table
	states   string // the quoted gap_states table
	retries  atomic.Int64
	appends  atomic.Int64 // Appends that committed, for Options.FoldEvery

	mu      sync.Mutex
	written map[coverage.Destination]struct{} // appended to since this Tier's last fold

	// blobs and deltas are the deltas layout's table and the object tier
	// over it, in deltas layout; opened whatever Options.Layout says,
	// since every read unions both layouts.
	blobs  *Blobs
	deltas *object.Tier
}

// The tables are a durable tier.
var (
	_ durable.Tier       = (*Tier)(nil)
	_ durable.LastWriter = (*Tier)(nil)
)

// Open connects (or takes Options.Pool), refuses a server older than 14
// (ErrServerTooOld), creates the schema and any missing table, and refuses
// a table of another shape (ErrSchemaMismatch), which it leaves as it is.
func Open(ctx context.Context, opts Options) (*Tier, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	t := &Tier{
		opts:     opts,
		pool:     opts.Pool,
		coverage: pgx.Identifier{opts.Schema, "coverage"}.Sanitize(),
		ckpts:    pgx.Identifier{opts.Schema, "checkpoints"}.Sanitize(),
		states:   pgx.Identifier{opts.Schema, "gap_states"}.Sanitize(),
	}
	if t.pool == nil {
		cfg, err := pgxpool.ParseConfig(opts.URL)
		if err != nil {
			// The error may quote the URL, password and all: not wrapped.
			return nil, errors.New("postgres: Options.URL does not parse as a PostgreSQL connection string")
		}
		if t.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, fmt.Errorf("postgres: open a pool: %w", err)
		}
		t.ownsPool = true
	}
	cc := t.pool.Config().ConnConfig
	// Remembered for every later output: a server (or a proxy) may quote
	// the password it was sent, and PGPASSWORD or .pgpass gives one no
	// shape of the URL shows.
	if cc.Password != cc.User {
		// A password that is the role's name hides nothing, and
		// redacting it would hide the role every error names.
		redact.Remember(cc.Password)
	}
	t.name = fmt.Sprintf("postgres %q, database %q, schema %s", net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))), cc.Database, pgx.Identifier{opts.Schema}.Sanitize())
	if err := t.init(ctx); err != nil {
		t.Close()
		// pgx's connection error names the database unquoted.
		return nil, redact.Error(err)
	}
	t.blobs = newBlobs(t.pool, opts.Schema, t.name)
	var err error
	t.deltas, err = object.Open(ctx, object.Options{Blobs: t.blobs, Layout: object.LayoutDeltas,
		MaxAttempts: opts.MaxAttempts, Logger: opts.Logger, Now: opts.Now, NameRetention: foldLogRetention(opts.NameRetention)})
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("postgres: %s: the deltas layout: %w", t.name, err)
	}
	return t, nil
}

func (t *Tier) init(ctx context.Context) error {
	var v string
	if err := t.pool.QueryRow(ctx, "SELECT current_setting('server_version_num')").Scan(&v); err != nil {
		return fmt.Errorf("postgres: %s: read the server version: %w", t.name, err)
	}
	num, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("postgres: %s: server_version_num %q is not a number", t.name, v)
	}
	if err := checkServerVersion(num); err != nil {
		return err
	}
	// Building the indexes beside running writers can still lose to
	// PostgreSQL's deadlock detector: it rolled back, so open again.
	for attempt := 1; ; attempt++ {
		err := ensureSchema(ctx, t.pool, t.opts.Schema)
		if err == nil || !retryable(err) || attempt >= t.opts.MaxAttempts {
			return err
		}
		t.retries.Add(1)
		if err := t.sleep(ctx, attempt); err != nil {
			return err
		}
	}
}

// Retries counts the transactions this Tier ran again after PostgreSQL
// rolled them back as a serialization failure or deadlock.
func (t *Tier) Retries() int64 { return t.retries.Load() }

// Name names the tier: server, database and schema, never credentials.
func (t *Tier) Name() string { return t.name }

// Close closes the pool if Open opened it; a pool given in Options is the
// caller's to close.
func (t *Tier) Close() {
	if t.ownsPool {
		t.pool.Close()
	}
}

// Append commits the checkpoint's ranges and its name in one transaction:
// the name row (writer, name, digest) is inserted first; if it is there
// already with this payload's digest the checkpoint has landed and nothing
// is written, with another it is ErrNameReused and nothing is written.
// Otherwise every destination gets a row holding its ranges; its coverage
// is the union of its rows (see Fold). The same round trip deletes up to
// PruneBatch of the writer's names older than Options.NameRetention. Every
// Options.FoldEvery-th Append then folds the destinations this Tier wrote
// since its last fold, after its checkpoint committed.
// MayHaveLanded changes nothing: the name is always looked for, at the
// cost of the insert that records it.
//
// A serialization failure or deadlock rolls the transaction back and is
// retried (Options.MaxAttempts); any other error, a failed commit among
// them, is returned and leaves the outcome unknown: append again, and the
// name row makes that a no-op if the first one landed (within
// Options.NameRetention; past it, a duplicate union).
func (t *Tier) Append(ctx context.Context, c durable.Checkpoint) error {
	if t.opts.Layout == LayoutDeltas {
		return t.appendDelta(ctx, c)
	}
	return t.appendWith(ctx, c, nil)
}

// appendWith is Append running also, when set, in the same transaction
// after the ranges (or after finding the name landed before), so that what
// it writes commits with the checkpoint or not at all.
func (t *Tier) appendWith(ctx context.Context, c durable.Checkpoint, also func(pgx.Tx) error) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if strings.IndexByte(c.Name, 0) >= 0 || strings.IndexByte(c.Writer, 0) >= 0 {
		return fmt.Errorf("postgres: %w: name %q or writer %q has a NUL byte, which PostgreSQL text cannot hold", durable.ErrInvalidCheckpoint, c.Name, c.Writer)
	}
	merged := durable.MergeRanges(c.Ranges)
	digest := durable.Digest("append", c.Writer, merged, c.Rows())
	sinks := []string{} // never NULL: a checkpoint without ranges still commits its name
	for _, dr := range merged {
		if len(dr.Ranges) > 0 && !slices.Contains(sinks, dr.Destination.Sink) {
			sinks = append(sinks, dr.Destination.Sink) // sorted: merged is in destination order
		}
	}
	now := t.opts.Now()
	var written dests // by the attempt that committed
	err := t.inTx(ctx, func(tx pgx.Tx) (bool, error) {
		written = dests{}
		inserted, err := t.recordName(ctx, tx, c, digest, sinks, now)
		if err != nil {
			return false, err
		}
		switch inserted {
		case 1:
			if written, err = insert(ctx, tx, t.opts.Schema, c.Writer, now, merged); err != nil {
				return false, err
			}
		case 0:
			var had string
			err := tx.QueryRow(ctx, "SELECT digest FROM "+t.ckpts+" WHERE writer = $1 AND name = $2", c.Writer, c.Name).Scan(&had)
			if errors.Is(err, pgx.ErrNoRows) {
				// Pruned between the insert that met it and this read (a
				// name past NameRetention): the whole transaction again,
				// whose insert then records it.
				return false, errNamePruned
			}
			if err != nil {
				return false, fmt.Errorf("read the name's digest: %w", err)
			}
			if had != digest {
				return false, fmt.Errorf("%w: committed with payload %s, now %s: give every distinct checkpoint its own name", durable.ErrNameReused, had, digest)
			}
			if also == nil {
				return false, nil // landed before: nothing to write
			}
		default:
			return false, fmt.Errorf("recording the name inserted %d rows", inserted)
		}
		if also != nil {
			if err := also(tx); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("postgres: append %q of %q to %s: %w", c.Name, c.Writer, t.name, err)
	}
	if every := t.opts.FoldEvery; every > 0 {
		t.noteWritten(written)
		if t.appends.Add(1)%int64(every) == 0 {
			t.foldWrittenSince(ctx)
		}
	}
	return nil
}

// inTx runs fn in a transaction and commits it if fn asks to, running it
// again after a serialization failure or deadlock, which PostgreSQL rolled
// back. Any other error is returned as it is.
func (t *Tier) inTx(ctx context.Context, fn func(pgx.Tx) (commit bool, err error)) error {
	for attempt := 1; ; attempt++ {
		err := t.tryTx(ctx, fn)
		if err == nil || !retryable(err) {
			return err
		}
		if attempt >= t.opts.MaxAttempts {
			return fmt.Errorf("%d attempts: %w", attempt, err)
		}
		t.retries.Add(1)
		t.opts.Logger.Debug("postgres: transaction rolled back by the server; retrying", "tier", t.name, "attempt", attempt, "err", err)
		if serr := t.sleep(ctx, attempt); serr != nil {
			return fmt.Errorf("%w (after: %w)", serr, err)
		}
	}
}

func (t *Tier) tryTx(ctx context.Context, fn func(pgx.Tx) (bool, error)) error {
	tx, err := t.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	commit, err := fn(tx)
	if err != nil || !commit {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit (outcome unknown unless the server rolled it back): %w", err)
	}
	return nil
}

// begin starts a transaction. A pooled connection the server has ended
// (a restart, a failover, an idle timeout) fails the begin and leaves the
// pool; nothing of the transaction has run, so begin takes the next one, as
// many times as the pool holds connections, then once more on a fresh one.
// A failure to connect at all is returned at once.
func (t *Tier) begin(ctx context.Context) (pgx.Tx, error) {
	for left := t.pool.Config().MaxConns; ; left-- {
		tx, err := t.pool.Begin(ctx)
		var ce *pgconn.ConnectError
		if err == nil || left <= 0 || ctx.Err() != nil || errors.As(err, &ce) {
			return tx, err
		}
	}
}

// retryable: PostgreSQL aborted the transaction as a serialization
// failure or a deadlock victim; it rolled back, so running it again is
// safe.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.Is(err, errNamePruned) || (errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01"))
}

// errNamePruned: a checkpoint's name was pruned while its append looked at
// it; the append runs again.
var errNamePruned = errors.New("the checkpoint's name was pruned meanwhile")

// sleep waits before retry attempt n: full jitter between MinBackoff and
// MaxBackoff.
func (t *Tier) sleep(ctx context.Context, attempt int) error {
	return backoff.Sleep(ctx, backoff.FullJitter(attempt, t.opts.MinBackoff, t.opts.MaxBackoff))
}
