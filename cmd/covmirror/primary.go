package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/postgres"
)

// The durable tiers --durable chooses between: the regime is declared,
// never guessed.
const (
	durableIceberg  = "iceberg"
	durableObject   = "object"
	durablePostgres = "postgres"
)

// postgresSettings are the postgres.* keys: the database and schema of the
// coverage rows when durable = postgres.
type postgresSettings struct {
	url    string
	schema string
}

// primaryNoun names the configured primary as an operator knows it.
func (g *globals) primaryNoun() string {
	switch g.durable {
	case durableObject:
		return "the sink objects"
	case durablePostgres:
		return "the coverage rows in PostgreSQL"
	}
	return "the coverage table"
}

// primaryIsTable: the coverage table is the primary (durable = iceberg);
// with the other tiers it is their queryable mirror.
func (g *globals) primaryIsTable() bool { return g.durable == durableIceberg }

// objectSettings are the object.* keys: where the sink objects live when
// durable = object. Credentials come from the AWS environment, never from
// here.
type objectSettings struct {
	url            string
	endpoint       string
	region         string
	forcePathStyle bool
	// unsafeStore skips check-store before writing: for a store known to
	// honour conditional writes that the check cannot run on.
	unsafeStore bool
}

// checkStoreWriters is how many concurrent conditional writes check-store
// races on one version before a writer uses an S3 store.
const checkStoreWriters = 16

// objectURL is object.url, or the embedded default under --state.
func (g *globals) objectURL() (string, error) {
	if g.object.url != "" {
		return g.object.url, nil
	}
	dir, err := filepath.Abs(filepath.Join(g.state, "objects"))
	if err != nil {
		return "", fmt.Errorf("object store under --state %s: %w", g.state, err)
	}
	// Built, not concatenated: a %, # or ? in the path is escaped, so the
	// URL parses back to exactly this directory.
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String(), nil
}

// openBlobs opens the object store of object.url.
func (g *globals) openBlobs(ctx context.Context) (object.Blobs, error) {
	u, err := g.objectURL()
	if err != nil {
		return nil, err
	}
	loc, err := object.ParseURL(u)
	if err != nil {
		return nil, usageError{fmt.Errorf("object.url: %w", err)} // a malformed setting
	}
	s3 := object.S3Options{Bucket: loc.Bucket, Prefix: loc.Prefix, Endpoint: g.object.endpoint, Region: g.object.region, ForcePathStyle: g.object.forcePathStyle}
	if loc.Scheme == "s3" {
		if err := s3.Validate(); err != nil {
			return nil, usageError{fmt.Errorf("object.s3.endpoint: %w", err)}
		}
	}
	b, err := object.OpenBlobs(ctx, u, s3)
	if err != nil {
		return nil, fmt.Errorf("object.url: %w", err) // a well-formed one that cannot be opened: a failure
	}
	return b, nil
}

// openPrimary opens the durable tier --durable names: the coverage table,
// or the sink objects under object.url. A writer (writing set) on an S3
// store first runs check-store on it and refuses a store that lets two
// conditional writes of one version win, which would drop coverage
// silently, unless object.unsafe-store says the store is trusted. The
// returned closer releases what the tier holds (a directory's lock).
func (g *globals) openPrimary(ctx context.Context, writing bool) (durable.Tier, io.Closer, error) {
	switch g.durable {
	case durableIceberg:
		t, err := g.openTable(ctx)
		return t, io.NopCloser(nil), err
	case durablePostgres:
		opts, err := g.postgresOptions()
		if err != nil {
			return nil, nil, err
		}
		t, err := postgres.Open(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return t, closerFunc(t.Close), nil
	}
	b, err := g.openBlobs(ctx)
	if err != nil {
		return nil, nil, err
	}
	closer := io.Closer(io.NopCloser(nil))
	if c, ok := b.(io.Closer); ok {
		closer = c
	}
	if _, isS3 := b.(*object.S3Blobs); writing && isS3 && !g.object.unsafeStore {
		rep, err := object.CheckStore(ctx, b, checkStoreWriters)
		if err != nil {
			_ = closer.Close()
			return nil, nil, fmt.Errorf("%w (run covmirror check-store for the report; set object.unsafe-store = true only for a store known to honour If-Match)", err)
		}
		g.logger.Debug("object store passed check-store", "store", b.Name(), "report", rep.String())
	}
	s, err := object.Open(ctx, object.Options{Blobs: b, Logger: g.logger})
	if err != nil {
		_ = closer.Close()
		return nil, nil, err
	}
	return s, closer, nil
}

// postgresOptions are the postgres tier's options from the postgres.*
// settings; a missing URL is a usage error that says where to give one.
func (g *globals) postgresOptions() (postgres.Options, error) {
	if g.postgres.url == "" {
		return postgres.Options{}, usageError{errors.New("durable = postgres needs the database: give --postgres-url, COVMIRROR_POSTGRES_URL or postgres.url (postgres://USER@HOST:5432/DB; the password from PGPASSWORD or ~/.pgpass)")}
	}
	if err := postgres.ValidateSchema(g.postgres.schema); err != nil {
		return postgres.Options{}, usageError{fmt.Errorf("postgres.schema: %w", err)}
	}
	return postgres.Options{URL: g.postgres.url, Schema: g.postgres.schema, Logger: g.logger}, nil
}

// closerFunc is a Close without an error as an io.Closer.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// parseDurable checks --durable.
func parseDurable(v string) error {
	switch v {
	case durableIceberg, durableObject, durablePostgres:
		return nil
	}
	return fmt.Errorf("durable %q: use iceberg (the coverage table in raw's catalog), object (a sink object per sink under object.url) or postgres (coverage rows in raw's PostgreSQL at postgres.url)", v)
}

// parseBoolSetting reads a boolean setting from the environment or the
// configuration file.
func parseBoolSetting(name, v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: use true or false", name, v)
	}
	return b, nil
}

// tableOf is the coverage table behind a tier, for the messages only a
// table can add to a failed write.
func tableOf(t durable.Tier) *iceberg.Table {
	tbl, _ := t.(*iceberg.Table)
	return tbl
}

// describeTier names a tier in messages as an operator knows it.
func describeTier(t durable.Tier) string {
	switch t.(type) {
	case *iceberg.Table:
		return "the coverage table"
	case *postgres.Tier:
		return "the coverage rows in " + t.Name()
	}
	return "the sink objects under " + t.Name()
}
