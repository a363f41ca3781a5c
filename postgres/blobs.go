package postgres

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/object"
)

// Blobs is object.Blobs in the blobs table of a tier's schema: one row per
// key, its bytes and a version. A conditional Put is one statement whose
// WHERE is the condition (INSERT ... ON CONFLICT DO NOTHING to create,
// UPDATE ... WHERE version = to replace), so the server decides it under
// the row's lock: exactly one of two writers of one version wins, and the
// other writes nothing. It is what the deltas layout (Options.Layout)
// writes through an object.Tier.
//
// A version is a random positive 63-bit number, new at every write, never
// a counter: a key deleted and created again must not take back a version
// a stale If-Match still holds. A row changed by hand must take a new
// version too: a folder that keeps the bases it wrote
// (object.Options.FoldCacheBases) writes over a row still at the version
// it wrote without reading it, so what was changed under that version is
// lost.
type Blobs struct {
	pool  *pgxpool.Pool
	table string // quoted
	name  string

	stats struct{ gets, puts, lists, deletes, bytesIn, bytesOut atomic.Int64 }
}

// BlobStats count a Blobs' statements since Open: a GetMany, PutMany or
// DeleteMany is one Get, Put or Delete, whatever its keys.
type BlobStats struct {
	Gets, Puts, Lists, Deletes int64
	// BytesIn is what Puts that wrote carried in; BytesOut what Gets
	// carried out.
	BytesIn, BytesOut int64
}

// Stats returns the counters.
func (b *Blobs) Stats() BlobStats {
	return BlobStats{Gets: b.stats.gets.Load(), Puts: b.stats.puts.Load(), Lists: b.stats.lists.Load(), Deletes: b.stats.deletes.Load(),
		BytesIn: b.stats.bytesIn.Load(), BytesOut: b.stats.bytesOut.Load()}
}

var _ object.Blobs = (*Blobs)(nil)

// retry runs op again, as many times as the pool holds connections and
// once more, while it fails on a pooled connection the server has ended
// (a restart, a failover, an idle timeout), as Tier.begin passes them
// over: a read or delete has no effect to fear repeating, and a Put is
// repeated only where nothing of it was sent (pgconn.SafeToRetry); any
// other outcome is the caller's.
func (b *Blobs) retry(ctx context.Context, idempotent bool, op func() error) error {
	for left := b.pool.Config().MaxConns; ; left-- {
		err := op()
		if err == nil || left <= 0 || ctx.Err() != nil || !connGone(err, idempotent) {
			return err
		}
	}
}

// connGone: err is a connection's end, not an answer to the statement.
// A write is retried only where nothing of it reached the server.
func connGone(err error, idempotent bool) bool {
	if pgconn.SafeToRetry(err) {
		return true
	}
	if !idempotent {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return false // the server cannot be reached: say so now
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "57P") // terminated by an operator or a shutdown
	}
	// Any other error but a timeout or an empty answer is the connection's:
	// a socket closed under it, an unexpected EOF.
	return !pgconn.Timeout(err) && !errors.Is(err, pgx.ErrNoRows)
}

// newBlobs is the blobs table of schema on pool; the schema is created
// by Open.
func newBlobs(pool *pgxpool.Pool, schema, tierName string) *Blobs {
	return &Blobs{pool: pool, table: pgx.Identifier{schema, "blobs"}.Sanitize(), name: tierName + " table blobs"}
}

// Blobs returns the tier's blobs table as object.Blobs: the store of the
// deltas layout, for a check (object.CheckStore) or a test.
func (t *Tier) Blobs() *Blobs { return t.blobs }

// Name names the table: server, database, schema and table.
func (b *Blobs) Name() string { return b.name }

// checkKey refuses a key PostgreSQL text cannot hold. The object tier's
// keys are ASCII; this is for anything else.
func checkKey(key string) error {
	if strings.IndexByte(key, 0) >= 0 || !utf8.ValidString(key) {
		return fmt.Errorf("postgres: blob key %q: a NUL byte or invalid UTF-8, which PostgreSQL text cannot hold", key)
	}
	return nil
}

// Get returns key's bytes and version; object.ErrNotFound when there is
// no row.
func (b *Blobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	if err := checkKey(key); err != nil {
		return nil, "", object.ErrNotFound // never stored
	}
	var data []byte
	var version int64
	err := b.retry(ctx, true, func() error {
		return b.pool.QueryRow(ctx, "SELECT data, version FROM "+b.table+" WHERE key = $1", key).Scan(&data, &version)
	})
	b.stats.gets.Add(1)
	b.stats.bytesOut.Add(int64(len(data)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", object.ErrNotFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("postgres: get %q from %s: %w", key, b.name, err)
	}
	return data, strconv.FormatInt(version, 10), nil
}

// Put writes data under key if the row is at version ifMatch, or, with
// ifMatch empty, if there is no row. A condition that does not hold is
// object.ErrPrecondition and nothing was written; any other error leaves
// the outcome unknown (the commit's answer may have been lost).
func (b *Blobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if data == nil {
		data = []byte{} // the column is NOT NULL; an empty object is empty bytes
	}
	next, err := newVersion()
	if err != nil {
		return "", err
	}
	var sql string
	args := []any{key, data, next}
	if ifMatch == "" {
		sql = "INSERT INTO " + b.table + " (key, data, version) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING"
	} else {
		want, perr := strconv.ParseInt(ifMatch, 10, 64)
		if perr != nil {
			// Not a version this table ever gave: no row is at it.
			return "", fmt.Errorf("postgres: put %q to %s if at version %q: %w", key, b.name, ifMatch, object.ErrPrecondition)
		}
		sql = "UPDATE " + b.table + " SET data = $2, version = $3 WHERE key = $1 AND version = $4"
		args = append(args, want)
	}
	var tag pgconn.CommandTag
	err = b.retry(ctx, false, func() (err error) {
		tag, err = b.pool.Exec(ctx, sql, args...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("postgres: put %q to %s (outcome unknown unless the server refused the statement): %w", key, b.name, err)
	}
	b.stats.puts.Add(1)
	if tag.RowsAffected() != 1 {
		if ifMatch == "" {
			return "", fmt.Errorf("postgres: create %q in %s: it exists: %w", key, b.name, object.ErrPrecondition)
		}
		return "", fmt.Errorf("postgres: put %q to %s if at version %s: it is not (gone, or written since): %w", key, b.name, ifMatch, object.ErrPrecondition)
	}
	b.stats.bytesIn.Add(int64(len(data)))
	return strconv.FormatInt(next, 10), nil
}

// newVersion is a random positive int64.
func newVersion() (int64, error) {
	var buf [8]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return 0, fmt.Errorf("postgres: a blob version: %w", err)
	}
	return int64(binary.BigEndian.Uint64(buf[:]) >> 1), nil
}

// List returns every key under prefix in lexical (byte) order. The
// prefix is a range of the primary key, [prefix, its successor), never a
// LIKE pattern, so '%' and '_' in it are plain characters.
func (b *Blobs) List(ctx context.Context, prefix string) ([]string, error) {
	if checkKey(prefix) != nil {
		return nil, nil // no stored key begins with it
	}
	// Two statements, not "$2 IS NULL OR key < $2": a generic plan of that
	// could not bound the index scan above.
	sql := "SELECT key FROM " + b.table + ` WHERE key COLLATE "C" >= $1 AND starts_with(key, $1) ORDER BY key COLLATE "C"`
	args := []any{prefix}
	if upper, ok := successor(prefix); ok {
		sql = "SELECT key FROM " + b.table + ` WHERE key COLLATE "C" >= $1 AND key COLLATE "C" < $2 AND starts_with(key, $1) ORDER BY key COLLATE "C"`
		args = append(args, upper)
	}
	b.stats.lists.Add(1)
	var keys []string
	err := b.retry(ctx, true, func() error {
		rows, err := b.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list %q in %s: %w", prefix, b.name, err)
	}
	return keys, nil
}

// successor is the least string above every string that begins with
// prefix, in byte order: prefix with its last character replaced by the
// next one (UTF-8 orders bytes as it orders code points). A last
// character with no next one is dropped, and the one before it is
// replaced; false when none is left (every key is under the prefix).
func successor(prefix string) (string, bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		next := r + 1
		if next >= 0xD800 && next <= 0xDFFF {
			next = 0xE000 // surrogates are not characters
		}
		if next <= utf8.MaxRune {
			return prefix + string(next), true
		}
	}
	return "", false
}

// Delete removes key; a missing key is not an error.
func (b *Blobs) Delete(ctx context.Context, key string) error {
	if checkKey(key) != nil {
		return nil // never stored
	}
	b.stats.deletes.Add(1)
	err := b.retry(ctx, true, func() error {
		_, err := b.pool.Exec(ctx, "DELETE FROM "+b.table+" WHERE key = $1", key)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete %q from %s: %w", key, b.name, err)
	}
	return nil
}
