package iceberg

import (
	"context"
	"crypto/rand"
	"maps"
	"slices"
	"sync"

	"github.com/covmirror/covmirror/coverage"
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

// NewStore returns the table as a Store whose direct records name writer.
func NewStore(t *Table, writer string) *Store { return &Store{table: t, writer: writer} }

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
	c := Commit{Name: s.writer + "/direct/" + rand.Text(), Writer: s.writer,
		Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}}
	return coverage.NewError("record", d, r, s.table.Append(ctx, c))
}

// Covered implements coverage.Store.
func (s *Store) Covered(ctx context.Context, d coverage.Destination) (coverage.RangeSet, error) {
	if err := d.Validate(); err != nil {
		return coverage.RangeSet{}, coverage.NewError("covered", d, coverage.Range{}, err)
	}
	if err := s.check(ctx, "covered", d, coverage.Range{}); err != nil {
		return coverage.RangeSet{}, err
	}
	all, err := s.table.Coverage(ctx, Filter{Sink: d.Sink, Topic: d.Topic, Partition: &d.Partition})
	if err != nil {
		return coverage.RangeSet{}, coverage.NewError("covered", d, coverage.Range{}, err)
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
	all, err := s.table.Coverage(ctx, Filter{})
	if err != nil {
		return nil, coverage.NewError("destinations", coverage.Destination{}, coverage.Range{}, err)
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
