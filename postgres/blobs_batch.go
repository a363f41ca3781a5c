package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/object"
)

// Blobs reads, writes and deletes many keys in one statement each, so
// that a fold of the deltas layout costs a few statements, not one per
// delta and base.
var _ object.BatchBlobs = (*Blobs)(nil)

// GetMany returns the rows of keys, one statement: a key without a row is
// absent from the map.
func (b *Blobs) GetMany(ctx context.Context, keys []string) (map[string]object.Object, error) {
	valid := make([]string, 0, len(keys))
	for _, k := range keys {
		if checkKey(k) == nil { // any other was never stored
			valid = append(valid, k)
		}
	}
	out := make(map[string]object.Object, len(valid))
	if len(valid) == 0 {
		return out, nil
	}
	var bytesOut int64
	err := b.retry(ctx, true, func() error {
		clear(out)
		bytesOut = 0
		rows, err := b.pool.Query(ctx, "SELECT key, data, version FROM "+b.table+" WHERE key = ANY($1::text[])", valid)
		if err != nil {
			return err
		}
		var key string
		var data []byte
		var version int64
		_, err = pgx.ForEachRow(rows, []any{&key, &data, &version}, func() error {
			out[key] = object.Object{Data: data, Version: strconv.FormatInt(version, 10)}
			bytesOut += int64(len(data))
			data = nil // the next row's bytes must not overwrite this one's
			return nil
		})
		return err
	})
	b.stats.gets.Add(1)
	if err != nil {
		return nil, fmt.Errorf("postgres: get %d keys from %s (from %q): %w", len(valid), b.name, valid[0], err)
	}
	b.stats.bytesOut.Add(bytesOut)
	return out, nil
}

// putManySQL writes each row of $1..$4 (key, data, new version, the
// version it must be at, NULL to create) under its own condition, in one
// statement, and returns the keys written: a creation is an INSERT that
// does nothing on a key taken, a replacement an UPDATE whose WHERE is the
// version. Both run on one snapshot and commit together or not at all.
const putManySQL = `
WITH p AS (
    SELECT * FROM unnest($1::text[], $2::bytea[], $3::int8[], $4::int8[]) AS p(key, data, next, want)
),
created AS (
    INSERT INTO %[1]s (key, data, version)
    SELECT key, data, next FROM p WHERE want IS NULL
    ON CONFLICT (key) DO NOTHING
    RETURNING key
),
replaced AS (
    UPDATE %[1]s b SET data = p.data, version = p.next
    FROM p
    WHERE p.want IS NOT NULL AND b.key = p.key AND b.version = p.want
    RETURNING b.key
)
SELECT key FROM created UNION ALL SELECT key FROM replaced`

// PutMany writes each put as Put would, in one statement: each lands
// under its own condition, or is refused ("" in the result) with nothing
// of it written. An error leaves every put's outcome unknown, as Put's.
func (b *Blobs) PutMany(ctx context.Context, puts []object.PutRequest) ([]string, error) {
	versions := make([]string, len(puts))
	var (
		sent []int // the puts sent, by index
		keys []string
		data [][]byte
		next []int64
		want []*int64 // nil: create
	)
	seen := make(map[string]bool, len(puts))
	for i, p := range puts {
		if err := checkKey(p.Key); err != nil {
			return nil, err
		}
		if seen[p.Key] {
			return nil, fmt.Errorf("postgres: put %d keys to %s at once: %q twice (nothing written)", len(puts), b.name, p.Key)
		}
		seen[p.Key] = true
		var w *int64
		if p.IfMatch != "" {
			v, err := strconv.ParseInt(p.IfMatch, 10, 64)
			if err != nil {
				continue // not a version this table ever gave: no row is at it, refused
			}
			w = &v
		}
		v, err := newVersion()
		if err != nil {
			return nil, err
		}
		d := p.Data
		if d == nil {
			d = []byte{} // the column is NOT NULL; an empty object is empty bytes
		}
		sent, keys, data, next, want = append(sent, i), append(keys, p.Key), append(data, d), append(next, v), append(want, w)
	}
	if len(sent) == 0 {
		return versions, nil
	}
	var written []string
	err := b.retry(ctx, false, func() error {
		rows, err := b.pool.Query(ctx, fmt.Sprintf(putManySQL, b.table), keys, data, next, want)
		if err != nil {
			return err
		}
		written, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: put %d keys to %s (from %q; outcome unknown unless the server refused the statement): %w", len(sent), b.name, keys[0], err)
	}
	b.stats.puts.Add(1)
	landed := make(map[string]bool, len(written))
	for _, k := range written {
		landed[k] = true
	}
	for j, i := range sent {
		if landed[keys[j]] {
			versions[i] = strconv.FormatInt(next[j], 10)
			b.stats.bytesIn.Add(int64(len(data[j])))
		}
	}
	return versions, nil
}

// DeleteMany removes the rows of keys, one statement; a missing key is not
// an error.
func (b *Blobs) DeleteMany(ctx context.Context, keys []string) error {
	valid := make([]string, 0, len(keys))
	for _, k := range keys {
		if checkKey(k) == nil {
			valid = append(valid, k)
		}
	}
	if len(valid) == 0 {
		return nil
	}
	b.stats.deletes.Add(1)
	err := b.retry(ctx, true, func() error {
		_, err := b.pool.Exec(ctx, "DELETE FROM "+b.table+" WHERE key = ANY($1::text[])", valid)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete %d keys from %s (from %q): %w", len(valid), b.name, valid[0], err)
	}
	return nil
}
