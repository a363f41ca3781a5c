package iceberg

import (
	"context"
	"crypto/rand"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// Store is the coverage table as a coverage.Store: every Record is one
// append commit, every read a scan. It is what a rebalancing owner and the
// recovery planner read. Pipelines record into the local tier and
// checkpoint here (package mirror); recording here directly costs a catalog
// commit per call.
type Store struct {
	table  *Table
	writer string

	mu     sync.Mutex
	closed bool
}

var _ coverage.Store = (*Store)(nil)

// StoreOptions configures NewStore. Zero values are documented defaults.
type StoreOptions struct {
	// Writer names this process in the snapshot summaries and rows of its
	// direct records. Required.
	Writer string
}

// EnsureDefaults fills in zero values. There is none to fill.
func (o *StoreOptions) EnsureDefaults() {}

// Validate reports unusable options.
func (o *StoreOptions) Validate() error {
	if o.Writer == "" {
		return errors.New("iceberg: StoreOptions.Writer is empty: name the recording process")
	}
	return nil
}

// NewStore returns the table as a Store.
func NewStore(t *Table, opts StoreOptions) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("iceberg: NewStore needs the coverage table: open it with Open")
	}
	return &Store{table: t, writer: opts.Writer}, nil
}

func (s *Store) check(ctx context.Context, op string, d coverage.Destination, r coverage.Range) error {
	if err := ctx.Err(); err != nil {
		return coverage.NewError(op, d, r, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return coverage.NewError(op, d, r, coverage.ErrClosed)
	}
	return nil
}

// Record implements coverage.Store with one append commit.
func (s *Store) Record(ctx context.Context, d coverage.Destination, r coverage.Range) error {
	if err := coverage.ValidateRecord(d, r); err != nil {
		return err
	}
	if err := s.check(ctx, "record", d, r); err != nil {
		return err
	}
	c := durable.Checkpoint{Name: s.writer + "/direct/" + rand.Text(), Writer: s.writer,
		Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}}
	return coverage.NewError("record", d, r, s.table.Append(ctx, c))
}

// Covered implements coverage.Store.
func (s *Store) Covered(ctx context.Context, d coverage.Destination) (coverage.RangeSet, error) {
	if err := d.Validate(); err != nil {
		return coverage.RangeSet{}, coverage.DestinationError("covered", d, err)
	}
	if err := s.check(ctx, "covered", d, coverage.Range{}); err != nil {
		return coverage.RangeSet{}, err
	}
	all, err := s.table.Coverage(ctx, durable.Filter{Sink: d.Sink, Topic: d.Topic, Partition: &d.Partition})
	if err != nil {
		return coverage.RangeSet{}, coverage.DestinationError("covered", d, err)
	}
	if set := all[d]; set != nil {
		return *set, nil
	}
	return coverage.RangeSet{}, nil
}

// Destinations implements coverage.Store.
func (s *Store) Destinations(ctx context.Context) ([]coverage.Destination, error) {
	if err := s.check(ctx, "destinations", coverage.Destination{}, coverage.Range{}); err != nil {
		return nil, err
	}
	all, err := s.table.Coverage(ctx, durable.Filter{})
	if err != nil {
		return nil, coverage.StoreError("destinations", err)
	}
	return slices.SortedFunc(maps.Keys(all), coverage.Destination.Compare), nil
}

// Close implements coverage.Store. The catalog stays open: it is the caller's.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
