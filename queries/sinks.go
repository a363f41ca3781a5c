package queries

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// namedSinksDDL creates the relation of the sinks every topic is written
// to besides those with rows (Params.Sinks), empty when none are named.
const namedSinksDDL = `CREATE TABLE named_sinks (sink VARCHAR)`

// bindSinks validates sinks and, for a text that reads named_sinks, makes
// the relation hold them, each once: a name no destination can have is an
// error wrapping coverage.ErrInvalidDestination and binds nothing. The
// relation is rewritten only when the names differ from what it holds.
func (q *DB) bindSinks(ctx context.Context, text string, sinks []string) error {
	sinks = slices.Compact(slices.Sorted(slices.Values(sinks)))
	for _, s := range sinks {
		if err := (coverage.Destination{Sink: s, Topic: "topic"}).Validate(); err != nil {
			return fmt.Errorf("queries: named sink %q: %w", s, err)
		}
	}
	if !strings.Contains(text, "named_sinks") || (q.sinksBound && slices.Equal(sinks, q.sinks)) {
		return nil
	}
	// Until the rows below are in, the relation holds neither set.
	q.sinksBound = false
	if _, err := q.conn.ExecContext(ctx, `DELETE FROM named_sinks`); err != nil {
		return fmt.Errorf("queries: binding the named sinks: %w", err)
	}
	err := q.appendTo(ctx, "named_sinks", func(add func(...driver.Value) error) error {
		for _, s := range sinks {
			if err := add(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queries: binding the named sinks: %w", err)
	}
	q.sinks, q.sinksBound = sinks, true
	return nil
}
