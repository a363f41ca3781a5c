package tier

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/iceberg-go/catalog"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/postgres"
)

// OpenTable opens the coverage table in the configured catalog, or in the
// embedded one under State when none is configured.
func OpenTable(ctx context.Context, s Settings) (*iceberg.Table, error) {
	s.EnsureDefaults()
	props := s.CatalogProps
	if len(props) == 0 {
		var err error
		if props, err = iceberg.EmbeddedProps(s.State); err != nil {
			return nil, err
		}
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		return nil, err
	}
	return iceberg.Open(ctx, cat, iceberg.Options{Namespace: []string{s.Namespace}, Name: s.Table, Logger: s.Logger})
}

// Catalog is the catalog of the coverage table: primary's own when the
// table is the primary, else the configured (or embedded) one, opened
// through OpenTable. An Iceberg sink table is read through it.
func Catalog(ctx context.Context, s Settings, primary durable.Tier) (catalog.Catalog, error) {
	t, ok := primary.(*iceberg.Table)
	if !ok {
		var err error
		if t, err = OpenTable(ctx, s); err != nil {
			return nil, err
		}
	}
	return t.Catalog(), nil
}

// OpenBlobs opens the object store of ObjectURL. The caller closes it if
// it is an io.Closer.
func OpenBlobs(ctx context.Context, s Settings) (object.Blobs, error) {
	s.EnsureDefaults()
	u, err := s.ObjectURL()
	if err != nil {
		return nil, err
	}
	loc, err := object.ParseURL(u)
	if err != nil {
		return nil, settingsError("object.url: %w", err)
	}
	s3 := object.S3Options{Bucket: loc.Bucket, Prefix: loc.Prefix, Endpoint: s.Object.S3Endpoint, Region: s.Object.S3Region, ForcePathStyle: s.Object.S3ForcePathStyle}
	if loc.Scheme == "s3" {
		if err := s3.Validate(); err != nil {
			return nil, settingsError("object.s3.endpoint: %w", err)
		}
	}
	b, err := object.OpenBlobs(ctx, u, s3)
	if err != nil {
		return nil, fmt.Errorf("object.url: %w", err) // a well-formed one that cannot be opened: a failure
	}
	return b, nil
}

// Open opens the durable tier Kind names. A writer (writing set) on an S3
// store first races conditional writes on it and refuses a store that
// lets two writes of one version win, which would drop coverage silently,
// unless Object.UnsafeStore says the store is trusted. The returned closer
// releases what the tier holds (a directory's lock, a pool).
func Open(ctx context.Context, s Settings, writing bool) (durable.Tier, io.Closer, error) {
	s.EnsureDefaults()
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	switch s.Kind {
	case Iceberg:
		t, err := OpenTable(ctx, s)
		return t, io.NopCloser(nil), err
	case Postgres:
		opts, err := s.PostgresOptions()
		if err != nil {
			return nil, nil, err
		}
		t, err := postgres.Open(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return t, closerFunc(t.Close), nil
	}
	b, err := OpenBlobs(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	closer := io.Closer(io.NopCloser(nil))
	if c, ok := b.(io.Closer); ok {
		closer = c
	}
	if _, isS3 := b.(*object.S3Blobs); writing && isS3 && !s.Object.UnsafeStore {
		rep, err := object.CheckStore(ctx, b, CheckStoreWriters)
		if err != nil {
			_ = closer.Close()
			return nil, nil, fmt.Errorf("%w (run covmirror check-store for the report; set object.unsafe-store = true only for a store known to honour If-Match)", err)
		}
		s.Logger.Debug("object store passed check-store", "store", b.Name(), "report", rep.String())
	}
	t, err := object.Open(ctx, object.Options{Blobs: b, Logger: s.Logger, Layout: object.Layout(s.Object.Layout)})
	if err != nil {
		_ = closer.Close()
		return nil, nil, err
	}
	return t, closer, nil
}

// OpenPositions opens the stored sources' positions beside the tier's
// coverage: the positions table in table's catalog, a positions object
// per source under ObjectURL, or the positions table in Postgres.URL. The
// caller closes the returned closer.
func OpenPositions(ctx context.Context, s Settings, table *iceberg.Table, sources []coverage.Source) (coverage.PositionStore, io.Closer, error) {
	s.EnsureDefaults()
	switch s.Kind {
	case Postgres:
		opts, err := s.PostgresOptions()
		if err != nil {
			return nil, nil, err
		}
		p, err := postgres.OpenPositions(ctx, opts, sources...)
		if err != nil {
			return nil, nil, fmt.Errorf("opening the positions table: %w", err)
		}
		return p, p, nil
	case Object:
		b, err := OpenBlobs(ctx, s)
		if err != nil {
			return nil, nil, err
		}
		p, err := object.OpenPositions(ctx, object.Options{Blobs: b, Logger: s.Logger}, sources...)
		if err != nil {
			return nil, nil, fmt.Errorf("opening the positions objects: %w", err)
		}
		closer := io.Closer(p)
		if c, ok := b.(io.Closer); ok {
			closer = closers{p, c}
		}
		return p, closer, nil
	}
	p, err := iceberg.OpenPositions(ctx, table.Catalog(), iceberg.Options{Namespace: []string{s.Namespace}, Logger: s.Logger}, "", s.Writer, sources...)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the positions table: %w", err)
	}
	return p, p, nil
}

// closerFunc is a Close without an error as an io.Closer.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// closers closes each in order and joins their errors.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Describe names a tier in messages as an operator knows it.
func Describe(t durable.Tier) string {
	switch t.(type) {
	case *iceberg.Table:
		return "the coverage table"
	case *postgres.Tier:
		return "the coverage rows in " + t.Name()
	}
	return "the sink objects under " + t.Name()
}
