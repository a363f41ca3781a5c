package queries

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// extentsDDL creates the relation the reference's holes are also looked for
// over: the source's acked extents, one row per (topic, partition), empty
// when none is known. Another engine binds its own (see docs/queries.md).
const extentsDDL = `CREATE TABLE acked_extents (topic VARCHAR, "partition" INTEGER, range_start BIGINT, range_end BIGINT)`

// bindExtents validates es and, for a text that reads acked_extents, makes
// the relation hold them: an invalid extent, or a partition given twice, is
// an error wrapping coverage.ErrInvalidExtent and binds nothing, whatever
// the text. The relation is rewritten only when es differ from what it
// holds.
func (q *DB) bindExtents(ctx context.Context, text string, es []coverage.Extent) error {
	es, err := coverage.ValidateExtents(es)
	if err != nil {
		return fmt.Errorf("queries: the source's acked extents: %w", err)
	}
	if !strings.Contains(text, "acked_extents") || (q.extentsBound && slices.Equal(es, q.extents)) {
		return nil
	}
	// Until the rows below are in, the relation holds neither set.
	q.extentsBound = false
	if _, err := q.conn.ExecContext(ctx, `DELETE FROM acked_extents`); err != nil {
		return fmt.Errorf("queries: binding the source's acked extents: %w", err)
	}
	err = q.appendTo(ctx, "acked_extents", func(add func(...driver.Value) error) error {
		for _, e := range es {
			// Validate keeps End within MaxBatchEnd, which is the BIGINT
			// columns' largest value.
			if err := add(e.Topic, e.Partition, int64(e.Start), int64(e.End)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queries: binding the source's acked extents: %w", err)
	}
	q.extents, q.extentsBound = es, true
	return nil
}
