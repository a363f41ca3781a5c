package queries

import (
	"context"
	"database/sql/driver"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// namedSinksDDL creates the relation of the named sinks (Params.Sinks and
// Params.TopicSinks): a row with a NULL topic names a sink every topic is
// written to; a topic's own rows name its sinks in place of those (a row
// with a NULL sink lists a topic with none named). Empty when none are
// named.
const namedSinksDDL = `CREATE TABLE named_sinks (topic VARCHAR, sink VARCHAR)`

// namedRow is one row of named_sinks; an empty topic or sink with its
// flag false is NULL.
type namedRow struct {
	topic, sink       string
	hasTopic, hasSink bool
}

// namedRows are the rows of named_sinks for def and perTopic, in one
// order, each once.
func namedRows(def []string, perTopic map[string][]string) []namedRow {
	var rows []namedRow
	for _, s := range slices.Compact(slices.Sorted(slices.Values(def))) {
		rows = append(rows, namedRow{sink: s, hasSink: true})
	}
	for _, topic := range slices.Sorted(maps.Keys(perTopic)) {
		sinks := slices.Compact(slices.Sorted(slices.Values(perTopic[topic])))
		if len(sinks) == 0 {
			rows = append(rows, namedRow{topic: topic, hasTopic: true}) // listed, none named
		}
		for _, s := range sinks {
			rows = append(rows, namedRow{topic: topic, sink: s, hasTopic: true, hasSink: true})
		}
	}
	return rows
}

func nullable(s string, ok bool) driver.Value {
	if !ok {
		return nil
	}
	return s
}

// bindSinks validates the named sinks and, for a text that reads
// named_sinks, makes the relation hold them: a name no destination can
// have is an error wrapping coverage.ErrInvalidDestination and binds
// nothing. The relation is rewritten only when its rows differ from what
// it holds.
func (q *DB) bindSinks(ctx context.Context, text string, def []string, perTopic map[string][]string) error {
	if err := coverage.ValidateNamedSinks(def, perTopic); err != nil {
		return fmt.Errorf("queries: %w", err)
	}
	rows := namedRows(def, perTopic)
	if !strings.Contains(text, "named_sinks") || (q.sinksBound && slices.Equal(rows, q.sinks)) {
		return nil
	}
	// Until the rows below are in, the relation holds neither set.
	q.sinksBound = false
	if _, err := q.conn.ExecContext(ctx, `DELETE FROM named_sinks`); err != nil {
		return fmt.Errorf("queries: binding the named sinks: %w", err)
	}
	err := q.appendTo(ctx, "named_sinks", func(add func(...driver.Value) error) error {
		for _, r := range rows {
			if err := add(nullable(r.topic, r.hasTopic), nullable(r.sink, r.hasSink)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queries: binding the named sinks: %w", err)
	}
	q.sinks, q.sinksBound = rows, true
	return nil
}
