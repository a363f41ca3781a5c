package queries

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"slices"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/recovery"
)

// Result is a query's output: column names and rows of Go values (string,
// int32, int64, time.Time, or nil for NULL). Batch totals (DECIMAL(38,0)
// sums) are int64 where they fit and *big.Int past that.
type Result struct {
	Columns []string
	Rows    [][]any
}

// Run runs the named canned query with p bound to its parameters. A query
// measured against the reference (it uses $reference) fails with an error
// wrapping recovery.ErrNoReference when the table has rows but none of the
// reference: a misspelt reference would otherwise report every sink
// complete, as Plan refuses to.
func (q *DB) Run(ctx context.Context, name string, p Params) (*Result, error) {
	text, err := Text(name)
	if err != nil {
		return nil, err
	}
	if slices.Contains(parameters(text), "reference") {
		if err := q.checkReference(ctx, p); err != nil {
			return nil, err
		}
	}
	if name == "gaps" {
		return q.runGrouped(ctx, text, p)
	}
	return q.RunSQL(ctx, text, p)
}

// gapsOrder ends the gaps query's text: its rows' order.
const gapsOrder = `ORDER BY sink, topic, "partition", "start", "end"`

// runGrouped runs the gaps query's text (but for its final ORDER BY) as a
// subquery and fetches its rows grouped by destination: one row each, with
// its gaps' starts and ends as two lists in the query's order, laid out as
// the query's rows again here. The driver converts a result value by value,
// and for a million gaps that took longer than the query; grouped, each
// destination's names cross once. Within a destination the query's rows are
// ordered by start and end, as both lists are, so the lists pair up as the
// rows did (two gaps of valid rows never share a start; of rows another
// engine wrote inverted they may, and end breaks the tie in both).
func (q *DB) runGrouped(ctx context.Context, text string, p Params) (*Result, error) {
	// The lists are ordered as the query orders its rows: its own final
	// sort, which DuckDB would run too, goes.
	if body, ok := strings.CutSuffix(strings.TrimSpace(text), gapsOrder); ok {
		text = body
	}
	grouped, err := q.RunSQL(ctx, `SELECT sink, topic, "partition",
       list("start" ORDER BY "start", "end") AS starts, list("end" ORDER BY "start", "end") AS ends,
       list(kind ORDER BY "start", "end") AS kinds, list(event_id ORDER BY "start", "end") AS events
FROM (
`+text+`
) AS gaps
GROUP BY sink, topic, "partition"
ORDER BY sink, topic, "partition"`, p)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, g := range grouped.Rows {
		starts, okS := g[3].([]any)
		ends, okE := g[4].([]any)
		kinds, okK := g[5].([]any)
		events, okV := g[6].([]any)
		if !okS || !okE || !okK || !okV || len(starts) != len(ends) || len(kinds) != len(starts) || len(events) != len(starts) {
			return nil, fmt.Errorf("queries: the grouped gaps of %v came back as %T, %T, %T and %T", g[:3], g[3], g[4], g[5], g[6])
		}
		total += len(starts)
	}
	res := &Result{Columns: []string{"sink", "topic", "partition", "start", "end", "kind", "event_id"}}
	if total == 0 {
		return res, nil
	}
	n := len(res.Columns)
	cells := make([]any, total*n)
	res.Rows = make([][]any, 0, total)
	for _, g := range grouped.Rows {
		starts, ends, kinds, events := g[3].([]any), g[4].([]any), g[5].([]any), g[6].([]any)
		for i := range starts {
			row := cells[:n:n]
			cells = cells[n:]
			row[0], row[1], row[2], row[3], row[4], row[5], row[6] = g[0], g[1], g[2], integer(starts[i]), integer(ends[i]), kinds[i], events[i]
			res.Rows = append(res.Rows, row)
		}
	}
	return res, nil
}

// checkReference fails when the coverage relation has rows and none of the
// reference.
func (q *DB) checkReference(ctx context.Context, p Params) error {
	ref := p.values()["reference"]
	// The common case stops at the first row of the reference; the sinks
	// are listed only for the error.
	found, err := q.RunSQL(ctx, `SELECT EXISTS (SELECT 1 FROM coverage WHERE sink = $reference)`, p)
	if err != nil {
		return err
	}
	if ok, _ := found.Rows[0][0].(bool); ok {
		return nil
	}
	res, err := q.RunSQL(ctx, `SELECT DISTINCT sink FROM coverage ORDER BY sink`, p)
	if err != nil {
		return err
	}
	var sinks []string
	for _, row := range res.Rows {
		s, _ := row[0].(string)
		sinks = append(sinks, s)
	}
	if len(sinks) == 0 {
		return nil // an empty table: nothing to measure, and nothing misspelt
	}
	where, holder := "the coverage table", "the table"
	if q.tier != "" {
		where, holder = q.tier, "it"
	}
	return fmt.Errorf("queries: reference %q has no rows in %s (%w); %s has rows of the sinks %s: pass the sink raw's coverage is recorded under",
		ref, where, recovery.ErrNoReference, holder, coverage.Names(sinks))
}

// RunSQL runs query text over the bound relations with p bound to the $name
// parameters it uses, p.Extents as the acked_extents relation and p.Sinks
// and p.TopicSinks as the named_sinks relation. The text must be trusted: it runs in the
// process's shared DuckDB instance (see the package doc).
func (q *DB) RunSQL(ctx context.Context, text string, p Params) (*Result, error) {
	if err := q.use(ctx); err != nil {
		return nil, err
	}
	if err := q.bindExtents(ctx, text, p.Extents); err != nil {
		return nil, err
	}
	if err := q.bindSinks(ctx, text, p.Sinks, p.TopicSinks); err != nil {
		return nil, err
	}
	values := p.values()
	var args []any
	for _, name := range parameters(text) {
		v, ok := values[name]
		if !ok {
			return nil, fmt.Errorf("queries: unknown parameter $%s", name)
		}
		args = append(args, sql.Named(name, v))
	}
	rows, err := q.conn.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, fmt.Errorf("queries: %w", err)
	}
	defer rows.Close()
	res := &Result{}
	if res.Columns, err = rows.Columns(); err != nil {
		return nil, fmt.Errorf("queries: %w", err)
	}
	// Rows are cut from blocks of values, and one set of scan targets
	// serves every row: a gaps query can return a million rows.
	n := len(res.Columns)
	ptrs := make([]any, n)
	var block []any
	for rows.Next() {
		if len(block) < n {
			block = make([]any, n*1024)
		}
		row := block[:n:n]
		block = block[n:]
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("queries: %w", err)
		}
		for i, v := range row {
			row[i] = integer(v)
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queries: %w", err)
	}
	return res, nil
}

// integer turns a whole-number HUGEINT or DECIMAL into an int64, or a
// *big.Int when it does not fit; other values pass through.
func integer(v any) any {
	var b *big.Int
	switch v := v.(type) {
	case *big.Int:
		b = v
	case duckdb.Decimal:
		if v.Scale != 0 || v.Value == nil {
			return v
		}
		b = v.Value
	default:
		return v
	}
	if b.IsInt64() {
		return b.Int64()
	}
	return b
}
