//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/queries"
	"github.com/covmirror/covmirror/tier"
)

// haveDuckDB: this build runs the canned queries.
const haveDuckDB = true

// The SQL dialects query --sql prints.
const (
	dialectDuckDB   = "duckdb"
	dialectPostgres = "postgres"
)

// extentQueries are the queries --acked-ends applies to.
var extentQueries = []string{"gaps", "lag", "summary"}

// What query --from reads.
const (
	fromPrimary = "primary"
	fromTable   = "table"
)

func runQuery(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "query", "NAME [--from primary|table] [--json|--csv] [--reference raw] [--sink S] [--topic T] [--partition P] [--acked-ends FILE] [--sinks a,b] [--topic-sinks T=a,b] [--sql [--dialect duckdb|postgres]] [--exit-code]\n\nqueries: "+strings.Join(queries.Names(), ", "))
	from := fs.String("from", fromPrimary, `what the queries read: "primary" (the durable tier --durable names) or "table" (the coverage table: with --durable object or postgres their mirror, which may lag); with --durable iceberg both are the table`)
	asJSON := fs.Bool("json", false, "print a JSON array of objects keyed by column")
	asCSV := fs.Bool("csv", false, "print CSV with a header line")
	printSQL := fs.Bool("sql", false, "print the query's SQL instead of running it")
	dialect := fs.String("dialect", dialectDuckDB, `with --sql: "duckdb" (over the coverage table's rows, as any engine reads them) or "postgres" (over the coverage rows of --durable postgres, in --postgres-schema, with the filters written in: ready for psql)`)
	reference := fs.String("reference", coverage.RawSink, "the sink gaps, summary and lag are measured against")
	sink := fs.String("sink", "", "only this sink")
	topic := fs.String("topic", "", "only this topic")
	var partition partitionFlag
	fs.Var(&partition, "partition", "only this partition, 0 to 2147483647 (default: all)")
	acked := extentsFlag(fs)
	sinks := sinksFlag(fs, planSinksUse+" (gaps, summary, lag)")
	exitCode := lite.ExitCodeFlag(fs) // query gaps only
	binding := fs.String("binding", "", `force the coverage relation's binding: "read_parquet" (local warehouse) or "scan" (default: read_parquet when the warehouse is local)`)
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageError{Err: fmt.Errorf("query: unexpected arguments %q", fs.Args())}
	}
	if name == "" {
		fs.Usage()
		return usageError{Err: fmt.Errorf("query: name a query: %s", strings.Join(queries.Names(), ", "))}
	}
	if *exitCode && name != "gaps" {
		return usageError{Err: fmt.Errorf("query: --exit-code applies to gaps, not %q", name)}
	}
	if *asJSON && *asCSV {
		return usageError{Err: fmt.Errorf("query: --json and --csv exclude each other")}
	}
	if *from != fromPrimary && *from != fromTable {
		return usageError{Err: fmt.Errorf("query: --from %q: use %s or %s", *from, fromPrimary, fromTable)}
	}
	readsPrimary := !g.tier.TableIsPrimary() && *from == fromPrimary
	if readsPrimary && *binding != "" {
		return usageError{Err: fmt.Errorf("query: --binding %s binds the coverage table's files; with --durable %s the primary is not the table: add --from table to query the table", *binding, g.tier.Kind)}
	}
	if *dialect != dialectDuckDB && *dialect != dialectPostgres {
		return usageError{Err: fmt.Errorf("query: --dialect %q: use %s or %s", *dialect, dialectDuckDB, dialectPostgres)}
	}
	if acked.set && slices.Contains(queries.Names(), name) && !slices.Contains(extentQueries, name) {
		return usageError{Err: fmt.Errorf("query: --acked-ends applies to %s, which look for raw's holes; %s does not", strings.Join(extentQueries, ", "), name)}
	}
	if sinks.given() && slices.Contains(queries.Names(), name) && !slices.Contains(extentQueries, name) {
		return usageError{Err: fmt.Errorf("query: --sinks and --topic-sinks apply to %s, which plan the named sinks' gaps; %s does not", strings.Join(extentQueries, ", "), name)}
	}
	extents, err := g.readExtents("query", *acked)
	if err != nil {
		return err
	}
	if *dialect == dialectPostgres {
		if !*printSQL {
			return usageError{Err: errors.New("query: --dialect postgres prints the PostgreSQL form with --sql; without --sql the query runs in DuckDB over the primary")}
		}
		text, err := postgres.QueryText(name, g.tier.Postgres.Schema, &postgres.QueryParams{Reference: *reference, Sink: *sink, Topic: *topic, Partition: partition.P, Extents: extents, Sinks: sinks.Sinks, TopicSinks: sinks.TopicSinks})
		if err != nil {
			return usageError{Err: fmt.Errorf("query: %w", err)}
		}
		_, err = fmt.Fprint(g.stdout, text)
		return err
	}
	text, err := queries.Text(name)
	if err != nil {
		return usageError{Err: err}
	}
	if *printSQL {
		_, err := fmt.Fprint(g.stdout, text)
		return err
	}
	p := queries.Params{Reference: *reference, Sink: *sink, Topic: *topic, Partition: partition.P, Extents: extents, Sinks: sinks.Sinks, TopicSinks: sinks.TopicSinks}
	var db *queries.DB
	if readsPrimary {
		primary, closer, err := openTier(ctx, g.tier, false)
		if err != nil {
			return err
		}
		db, err = queries.OpenTier(ctx, primary, queries.Options{})
		_ = closer.Close() // read once: DuckDB holds the rows
		if err != nil {
			return err
		}
	} else {
		table, err := tier.OpenTable(ctx, g.tier)
		if err != nil {
			return err
		}
		if !g.tier.TableIsPrimary() {
			fmt.Fprintf(g.stderr, "query: reading the coverage table %s, the replica of %s: it lags them by what `covmirror replicate` has not copied yet\n", table.Name(), g.tier.Noun())
		}
		db, err = queries.Open(ctx, table, queries.Options{Binding: queries.Binding(*binding)})
		if err != nil {
			return err
		}
	}
	defer db.Close()
	res, err := db.Run(ctx, name, p)
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		err = res.WriteJSON(g.stdout)
	case *asCSV:
		err = res.WriteCSV(g.stdout)
	default:
		err = res.WriteTable(g.stdout, "")
	}
	return lite.GapsFound(*exitCode, len(res.Rows), err)
}

// showGaps prints the gaps query over the primary, for the demo; over
// names the primary in the heading.
func showGaps(ctx context.Context, w io.Writer, primary durable.Tier, over string) error {
	var db *queries.DB
	var err error
	if table, ok := primary.(*iceberg.Table); ok {
		db, err = queries.Open(ctx, table, queries.Options{})
		over = "the table's files"
	} else {
		db, err = queries.OpenTier(ctx, primary, queries.Options{})
	}
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := db.Run(ctx, "gaps", queries.Params{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   covmirror query gaps (DuckDB over %s):\n", over)
	return res.WriteTable(w, "   ")
}
