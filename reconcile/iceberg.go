package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
)

// DefaultBatchColumn is IcebergOptions.BatchColumn's zero value.
const DefaultBatchColumn = "batch_id"

// IcebergOptions configures NewIceberg. Catalog and Table are required;
// the zero value of every other field is a documented default.
type IcebergOptions struct {
	// Catalog holds the sink table: the catalog covmirror already opens.
	Catalog catalog.Catalog
	// Table is the sink table's identifier in Catalog.
	Table table.Identifier
	// BatchColumn is the sink table's batch-id column, a long or an int.
	// Zero value: DefaultBatchColumn.
	BatchColumn string
	// TopicColumn and PartitionColumn, when given, hold each row's topic
	// (a string) and partition (an int), and the scan keeps the
	// destination's rows only. Zero values: the table is not filtered by
	// them, so it must hold one topic's partition alone; the checker then
	// answers for the first destination it is asked about and refuses any
	// other (its rows would answer for every destination, hiding a lost
	// partition).
	TopicColumn, PartitionColumn string
	// Timeout bounds one check: the table's load and its scan. Zero value:
	// DefaultTimeout.
	Timeout time.Duration
}

// EnsureDefaults fills in the zero-valued fields with their defaults.
func (o *IcebergOptions) EnsureDefaults() {
	if o.BatchColumn == "" {
		o.BatchColumn = DefaultBatchColumn
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
}

// Validate reports options no checker can run with.
func (o *IcebergOptions) Validate() error {
	switch {
	case o.Catalog == nil || len(o.Table) == 0:
		return errors.New("reconcile: an Iceberg checker needs the catalog and the sink table's identifier")
	case o.Timeout < 0:
		return fmt.Errorf("reconcile: Iceberg checker timeout %v is negative (zero for %v)", o.Timeout, DefaultTimeout)
	}
	return nil
}

// IcebergChecker scans an Iceberg sink table's batch-id column, one scan
// per range, filtered by the range (and the destination, with its columns)
// so the table's own statistics prune the files that cannot hold it. The
// table is loaded afresh for each check: a rewrite since the last one is
// seen.
type IcebergChecker struct {
	opts IcebergOptions

	mu    sync.Mutex
	first *coverage.Destination // the one destination a table without destination columns answers for
}

// NewIceberg returns a checker on the sink table.
func NewIceberg(opts IcebergOptions) (*IcebergChecker, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &IcebergChecker{opts: opts}, nil
}

// Held implements Checker.
func (c *IcebergChecker) Held(ctx context.Context, d coverage.Destination, ranges []coverage.Range) (*coverage.RangeSet, error) {
	if err := c.only(d); err != nil {
		return nil, err
	}
	var ids []uint64
	for _, r := range ranges {
		got, err := c.ids(ctx, d, r)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	return heldOf(ids, ranges)
}

// only refuses, when the table is not filtered by topic or partition, a
// destination the table's columns cannot tell from the first one asked.
func (c *IcebergChecker) only(d coverage.Destination) error {
	if c.opts.TopicColumn != "" && c.opts.PartitionColumn != "" {
		return nil // filtered by both: any destination
	}
	key := coverage.Destination{Sink: d.Sink}
	if c.opts.TopicColumn == "" {
		key.Topic = d.Topic
	}
	if c.opts.PartitionColumn == "" {
		key.Partition = d.Partition
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first == nil {
		c.first = &key
		return nil
	}
	if *c.first != key {
		return fmt.Errorf("the sink table %v has no topic or partition column to tell %v from %v, the destination it answered for: give IcebergOptions.TopicColumn and PartitionColumn, or one checker per single-destination table",
			c.opts.Table, d, *c.first)
	}
	return nil
}

func (c *IcebergChecker) ids(ctx context.Context, d coverage.Destination, r coverage.Range) ([]uint64, error) {
	if err := askable(r); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	tbl, err := c.opts.Catalog.LoadTable(ctx, c.opts.Table)
	if err != nil {
		return nil, fmt.Errorf("loading the sink table %v: %w", c.opts.Table, timedOut(ctx, err))
	}
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	col := ice.Reference(c.opts.BatchColumn)
	filter := ice.NewAnd(ice.GreaterThanEqual(col, int64(r.Start)), ice.LessThan(col, int64(r.End)))
	if c.opts.TopicColumn != "" {
		filter = ice.NewAnd(filter, ice.EqualTo(ice.Reference(c.opts.TopicColumn), d.Topic))
	}
	if c.opts.PartitionColumn != "" {
		filter = ice.NewAnd(filter, ice.EqualTo(ice.Reference(c.opts.PartitionColumn), d.Partition))
	}
	_, records, err := tbl.Scan(table.WithRowFilter(filter), table.WithSelectedFields(c.opts.BatchColumn)).ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("scanning the sink table %v for %v: %w", c.opts.Table, r, timedOut(ctx, err))
	}
	var ids []uint64
	for rec, err := range records {
		if err != nil {
			return nil, fmt.Errorf("reading the sink table %v for %v: %w", c.opts.Table, r, timedOut(ctx, err))
		}
		got, err := columnIDs(rec, c.opts.BatchColumn, r)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("the sink table %v: %w", c.opts.Table, err)
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

// columnIDs reads the batch ids of one record batch, refusing a null, a
// value of another type, or an id outside r.
func columnIDs(rec arrow.RecordBatch, name string, r coverage.Range) ([]uint64, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("%w: the scan returned no column %q", ErrBadAnswer, name)
	}
	col := rec.Column(idx[0])
	ids := make([]uint64, 0, col.Len())
	for i := range col.Len() {
		var v int64
		switch a := col.(type) {
		case *array.Int64:
			v = a.Value(i)
		case *array.Int32:
			v = int64(a.Value(i))
		default:
			return nil, fmt.Errorf("%w: column %q is %s, not a long or an int", ErrBadAnswer, name, col.DataType())
		}
		if col.IsNull(i) || v < 0 || !r.Contains(uint64(v)) {
			return nil, fmt.Errorf("%w: the scan for %v returned batch id %d (null: %v)", ErrOutOfRange, r, v, col.IsNull(i))
		}
		ids = append(ids, uint64(v))
	}
	return ids, nil
}
