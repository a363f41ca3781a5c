package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
)

// The canned queries in PostgreSQL's own SQL over the coverage rows'
// multiranges: the same names, columns and rows as the DuckDB forms over
// the coverage table (package queries), so a DBA can run them in psql.
//
//go:embed sql/*.sql sql/parts/*.sql
var sqlFiles embed.FS

// ErrNoPostgresForm: the query has no PostgreSQL form. files reports the
// coverage table's data files, which these tables do not have.
var ErrNoPostgresForm = errors.New("query has no PostgreSQL form")

// QueryNames lists the queries that have a PostgreSQL form.
func QueryNames() []string {
	entries, _ := sqlFiles.ReadDir("sql")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() { // parts/ holds fragments, not queries
			names = append(names, strings.TrimSuffix(e.Name(), ".sql"))
		}
	}
	slices.Sort(names)
	return names
}

// QueryParams are a query's parameters. Zero values: Reference is
// coverage.RawSink; an empty Sink or Topic and a nil Partition match
// everything; no Extents are known.
type QueryParams struct {
	Reference string
	Sink      string
	Topic     string
	Partition *int32
	// Extents are the source's acked extents, at most one per (topic,
	// partition) (coverage.ValidateExtents): the reference's holes are
	// looked for over each as well. They are passed as one parameter, $5,
	// the JSON text coverage.ParseExtents reads.
	Extents []coverage.Extent
	// Sinks are sinks every topic is written to, as
	// recovery.PlanOptions.Sinks: besides the sinks with rows of a topic,
	// each lacks the reference's ranges of every topic it has no rows of.
	// They select nothing (Sink does). They are passed with TopicSinks as
	// one parameter, $6 (see QueryText).
	Sinks []string
	// TopicSinks are the named sinks per topic, in place of Sinks for its
	// keys (coverage.SinksFor: an empty list names none for its topic).
	// Zero value: Sinks for every topic.
	TopicSinks map[string][]string
}

// args are the six positional parameters every query declares, in order.
// Invalid extents are an error wrapping coverage.ErrInvalidExtent, a sink
// name no destination can have one wrapping coverage.ErrInvalidDestination.
func (p QueryParams) args() ([]any, error) {
	ref := p.Reference
	if ref == "" {
		ref = coverage.RawSink
	}
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	var part any
	if p.Partition != nil {
		part = *p.Partition
	}
	extents, err := extentsJSON(p.Extents)
	if err != nil {
		return nil, err
	}
	sinks, err := sinksJSON(p.Sinks, p.TopicSinks)
	if err != nil {
		return nil, err
	}
	return []any{ref, orNull(p.Sink), orNull(p.Topic), part, extents, sinks}, nil
}

// namedSink is one object of $6: a NULL topic names a sink of every topic
// without objects of its own, a NULL sink lists a topic with none named.
type namedSink struct {
	Topic *string `json:"topic"`
	Sink  *string `json:"sink"`
}

// sinksJSON is the named sinks, validated, sorted and each once, as the
// JSON array of namedSink the queries expand with jsonb_to_recordset.
func sinksJSON(def []string, perTopic map[string][]string) (string, error) {
	if err := coverage.ValidateNamedSinks(def, perTopic); err != nil {
		return "", fmt.Errorf("postgres: %w", err)
	}
	rows := []namedSink{}
	for _, s := range slices.Compact(slices.Sorted(slices.Values(def))) {
		rows = append(rows, namedSink{Sink: &s})
	}
	for _, topic := range slices.Sorted(maps.Keys(perTopic)) {
		sinks := slices.Compact(slices.Sorted(slices.Values(perTopic[topic])))
		if len(sinks) == 0 {
			rows = append(rows, namedSink{Topic: &topic})
		}
		for _, s := range sinks {
			rows = append(rows, namedSink{Topic: &topic, Sink: &s})
		}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return "", fmt.Errorf("postgres: the named sinks: %w", err)
	}
	return string(b), nil
}

// extentsJSON is es, validated, as the JSON array the queries expand with
// jsonb_to_recordset ("[]" for none).
func extentsJSON(es []coverage.Extent) (string, error) {
	es, err := coverage.ValidateExtents(es)
	if err != nil {
		return "", fmt.Errorf("postgres: the source's acked extents: %w", err)
	}
	if len(es) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(es)
	if err != nil {
		return "", fmt.Errorf("postgres: the source's acked extents: %w", err)
	}
	return string(b), nil
}

// QueryText is the named query's SQL over the coverage table in schema.
// With p set, its parameters are written in as literals, ready for psql
// (whatever the names hold: see bindLiterals; a name PostgreSQL text
// cannot hold is ErrUnprintable); without, they stay $1 (reference), $2
// (sink), $3 (topic), $4 (partition), $5 (the source's acked extents as
// JSON text: [{"topic","partition","start","end"}], '[]' for none) and $6
// (the named sinks as JSON text, '[]' for none: [{"topic": null, "sink":
// "lake"}] names lake in every topic, [{"topic": "orders", "sink": "pg"}]
// names pg in orders in place of those, and [{"topic": "orders", "sink":
// null}] names none in orders).
func QueryText(name, schema string, p *QueryParams) (string, error) {
	if err := ValidateSchema(schema); err != nil {
		return "", err
	}
	var args []any
	if p != nil {
		var err error
		if args, err = p.args(); err != nil {
			return "", err
		}
	}
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		return "", fmt.Errorf("postgres: %q: %w (the queries with one are %s)", name, ErrNoPostgresForm, strings.Join(QueryNames(), ", "))
	}
	// A destination's coverage is the union of its rows (see Fold).
	merged := "(SELECT sink, topic, \"partition\", range_agg(covered) AS covered, max(last_write) AS last_write FROM " +
		pgx.Identifier{schema, "coverage"}.Sanitize() + " GROUP BY sink, topic, \"partition\")"
	// The shared CTEs, in this order: a part may name the parts after it.
	text := string(b)
	for _, part := range []string{"held", "gap_ctes", "params", "sinks", "acked_extents", "reference_known"} {
		cte, err := sqlFiles.ReadFile("sql/parts/" + part + ".sql")
		if err != nil {
			return "", fmt.Errorf("postgres: the shared CTEs %s are not embedded: %w", part, err)
		}
		text = strings.ReplaceAll(text, "{{"+part+"}}", strings.TrimSpace(stripComments(string(cte))))
	}
	text = strings.ReplaceAll(text, "{{coverage}}", merged)
	text = strings.ReplaceAll(text, "{{gap_states}}", pgx.Identifier{schema, "gap_states"}.Sanitize())
	if p == nil {
		return text, nil
	}
	return bindLiterals(text, args)
}

// QueryResult is a query's columns and rows, as pgx decodes them.
type QueryResult struct {
	Columns []string
	Rows    [][]any
}

// Query runs the named query in the tier's database.
func (t *Tier) Query(ctx context.Context, name string, p QueryParams) (*QueryResult, error) {
	text, err := QueryText(name, t.opts.Schema, nil)
	if err != nil {
		return nil, err
	}
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	var res *QueryResult
	err = t.read(ctx, func(tx pgx.Tx) error {
		res = &QueryResult{}
		rows, err := tx.Query(ctx, text, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for _, f := range rows.FieldDescriptions() {
			res.Columns = append(res.Columns, f.Name)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return err
			}
			res.Rows = append(res.Rows, vals)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: query %s on %s: %w", name, t.name, err)
	}
	return res, nil
}

// stripComments drops a fragment's leading comment lines, which describe it
// where it is kept, not where it is expanded.
func stripComments(text string) string {
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "--") {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}
