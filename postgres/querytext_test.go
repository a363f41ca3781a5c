package postgres

import (
	"bytes"
	"crypto/rand"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
)

// FuzzQueryTextAgrees: the text QueryText prints for psql, its parameters
// written in as literals, runs as exactly one statement and returns
// exactly Tier.Query's rows, whatever the names: quotes, placeholders,
// CAST(, backslashes, dollar quotes, E” strings, comments, unicode, and
// under either standard_conforming_strings. It runs the text both over the
// simple protocol and through psql itself, as docs/queries.md pipes it. A name
// PostgreSQL text cannot hold (a NUL, invalid UTF-8) is refused with an
// error. The seeds run in every go test; make fuzz explores further.
func FuzzQueryTextAgrees(f *testing.F) {
	hostile := []string{
		"CAST($3 AS", "CAST($4 AS integer)", "$1", "$2$", "x'y", "''", "';CREATE TABLE pwned(a int);--",
		`\`, `\'`, `a\\'b`, "$$", "$$;CREATE TABLE pwned(a int);$$", "$tag$", "E'", `E'\''`, "--", "/*", "*/",
		"/* x */'", "é", "漢字", "\u202e", "tab\there", "line\nbreak", "cr\rx", "\x1b[31m", ":name", ":'name'",
		`"quoted"`, "\\';CREATE TABLE pwned(a int);--",
	}
	for i, s := range hostile {
		other := hostile[(i+7)%len(hostile)]
		f.Add(s, other, "", int32(-1))
		f.Add(other, s, s, int32(i))
	}
	// The break-out: the sink carries the topic's placeholder, and
	// the topic ends the statement and starts another.
	f.Add("CAST($3 AS", " AS text) AS sink) SELECT 1; CREATE TABLE pwned(a int); WITH params AS (SELECT CAST(", "", int32(-1))
	f.Add("nul\x00", "t", "", int32(-1))
	f.Add("s", "bad\xffutf8", "", int32(-1))

	schema := freshSchema(f)
	tier := openTier(f, schema)
	conn, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		f.Fatal(catalogtest.Unreachable(err))
	}
	f.Cleanup(func() { _ = conn.Close(ctx) })
	// What a name might create lands in the schema, dropped with it.
	if _, err := conn.Exec(ctx, "SET search_path = "+pgx.Identifier{schema}.Sanitize()); err != nil {
		f.Fatal(err)
	}
	psql, err := osexec.LookPath("psql")
	if err != nil {
		f.Fatalf("psql is needed to run the printed text as a DBA would: %v (install postgresql-client)", err)
	}
	n := 0
	f.Fuzz(func(t *testing.T, sink, topic, reference string, part int32) {
		p := QueryParams{Reference: reference, Sink: sink, Topic: topic}
		if part >= 0 {
			p.Partition = &part
		}
		if bad := unprintable(sink, topic, reference); bad != "" {
			for _, name := range QueryNames() {
				if text, err := QueryText(name, schema, &p); err == nil {
					t.Fatalf("%s: QueryText printed a text for %q:\n%s", name, bad, text)
				} else if !strings.Contains(err.Error(), "parameter") {
					t.Fatalf("%s: the error for %q does not say which parameter: %v", name, bad, err)
				}
			}
			return
		}
		n++
		ref := reference
		if ref == "" {
			ref = coverage.RawSink
		}
		var recorded bool
		if d := (coverage.Destination{Sink: sink, Topic: topic, Partition: max(part, 0)}); d.Validate() == nil {
			r := (coverage.Destination{Sink: ref, Topic: topic, Partition: d.Partition})
			ranges := oneRange(d, 3, 10)
			if r.Validate() == nil && r != d {
				ranges = append(ranges, oneRange(r, 0, 20)...)
			}
			if err := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: fmt.Sprint("q", n), Ranges: ranges}); err != nil {
				t.Fatal(err)
			}
			recorded = true
			t.Cleanup(func() { exec(t, "DELETE FROM "+pgx.Identifier{schema, "coverage"}.Sanitize()) })
		}
		var script strings.Builder // every text under both settings, for one psql
		var psqlWant [][][]string
		mark := "-- end " + rand.Text()
		for _, name := range QueryNames() {
			want, err := tier.Query(ctx, name, p)
			if err != nil {
				t.Fatalf("%s with %+v: %v", name, p, err)
			}
			if recorded && name == "coverage" && len(want.Rows) == 0 {
				t.Fatalf("coverage with %+v: no rows, though the destination was recorded", p)
			}
			text, err := QueryText(name, schema, &p)
			if err != nil {
				t.Fatalf("%s with %+v: %v", name, p, err)
			}
			for _, standard := range []string{"on", "off"} {
				where := fmt.Sprintf("%s with %+v, standard_conforming_strings %s", name, p, standard)
				if _, err := conn.Exec(ctx, "SET standard_conforming_strings = "+standard); err != nil {
					t.Fatal(err)
				}
				res, err := readAll(conn.PgConn().Exec(ctx, text))
				if err != nil {
					t.Fatalf("%s: the printed text fails: %v\n%s", where, err, text)
				}
				if len(res) != 1 {
					t.Fatalf("%s: the printed text ran %d statements, want 1\n%s", where, len(res), text)
				}
				got := decodeText(t, conn.TypeMap(), res[0])
				if cols := fieldNames(res[0].FieldDescriptions); !reflect.DeepEqual(cols, want.Columns) {
					t.Fatalf("%s: columns %v, Tier.Query's %v", where, cols, want.Columns)
				}
				if g, w := catalogtest.CellText(got), catalogtest.CellText(want.Rows); !reflect.DeepEqual(g, w) {
					t.Fatalf("%s: the printed text's rows\n%v\nTier.Query's\n%v\n%s", where, g, w, text)
				}
				fmt.Fprintf(&script, "SET standard_conforming_strings = %s;\n%s\n;\n\\echo '%s'\n", standard, text, mark)
				psqlWant = append(psqlWant, psqlCells(res[0]))
			}
		}
		if out := runPsql(t, psql, schema, script.String(), mark); !reflect.DeepEqual(out, psqlWant) {
			t.Fatalf("psql with %+v printed\n%q\nwant\n%q\n%s", p, out, psqlWant, script.String())
		}
		var pwned bool
		if err := conn.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_tables WHERE tablename = 'pwned'").Scan(&pwned); err != nil || pwned {
			t.Fatalf("a table the names asked for exists (%v, %v)", pwned, err)
		}
	})
}

// readAll is every result of a simple-protocol text, with its columns
// even when it has no rows (pgconn's ReadAll keeps them only with rows).
func readAll(mrr *pgconn.MultiResultReader) ([]*pgconn.Result, error) {
	var out []*pgconn.Result
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		res := &pgconn.Result{FieldDescriptions: slices.Clone(rr.FieldDescriptions())}
		for rr.NextRow() {
			row := make([][]byte, len(rr.Values()))
			for i, v := range rr.Values() {
				if v != nil {
					row[i] = slices.Clone(v)
				}
			}
			res.Rows = append(res.Rows, row)
		}
		if _, err := rr.Close(); err != nil {
			_ = mrr.Close()
			return nil, err
		}
		out = append(out, res)
	}
	return out, mrr.Close()
}

// unprintable is the first value PostgreSQL text cannot hold.
func unprintable(vals ...string) string {
	for _, v := range vals {
		if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
			return v
		}
	}
	return ""
}

func fieldNames(fds []pgconn.FieldDescription) []string {
	out := make([]string, len(fds))
	for i, fd := range fds {
		out[i] = fd.Name
	}
	return out
}

// decodeText decodes a simple-protocol result's text cells as pgx decodes
// Tier.Query's.
func decodeText(t *testing.T, m *pgtype.Map, res *pgconn.Result) [][]any {
	t.Helper()
	out := make([][]any, len(res.Rows))
	for i, row := range res.Rows {
		for j, cell := range row {
			fd := res.FieldDescriptions[j]
			typ, ok := m.TypeForOID(fd.DataTypeOID)
			if !ok {
				t.Fatalf("column %s has type %d, which pgx does not know", fd.Name, fd.DataTypeOID)
			}
			v, err := typ.Codec.DecodeValue(m, fd.DataTypeOID, fd.Format, cell)
			if err != nil {
				t.Fatalf("column %s: %v", fd.Name, err)
			}
			out[i] = append(out[i], v)
		}
	}
	return out
}

// runPsql pipes script into psql, as docs/queries.md does, and parses the CSV
// of each of its results, which end at a line of mark.
func runPsql(t *testing.T, psql, schema, script, mark string) [][][]string {
	t.Helper()
	cmd := osexec.CommandContext(ctx, psql, "-X", "-q", "--csv", "-t", "-v", "ON_ERROR_STOP=1", catalogtest.PostgresURL())
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path="+schema)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("psql: %v: %s\n%s", err, stderr.String(), script)
	}
	parts := strings.Split(string(out), mark+"\n")
	if parts[len(parts)-1] != "" {
		t.Fatalf("psql printed more than its results: %q", out)
	}
	var results [][][]string
	for _, part := range parts[:len(parts)-1] {
		recs, err := csv.NewReader(strings.NewReader(part)).ReadAll()
		if err != nil {
			t.Fatalf("psql's output is not CSV: %v\n%q", err, part)
		}
		if recs == nil {
			recs = [][]string{}
		}
		results = append(results, recs)
	}
	return results
}

// psqlCells are a result's text cells as psql prints them, NULL empty.
func psqlCells(res *pgconn.Result) [][]string {
	out := [][]string{}
	for _, row := range res.Rows {
		cells := make([]string, len(row))
		for j, c := range row {
			cells[j] = string(c)
		}
		out = append(out, cells)
	}
	return out
}

// bindLiterals replaces the placeholders of the text's own tokens only: one
// in a comment, a literal, a quoted identifier or a dollar quote is text,
// and one beyond the parameters given is an error.
func TestBindLiteralsTokens(t *testing.T) {
	text := "-- $1\nSELECT '$1', E'\\'$1', \"$1\", $q$ $1 $q$, $$ $2 $$, a$1, $1, /* $1 /* $2 */ $1 */ $2, -$3 -- $2"
	got, err := bindLiterals(text, []any{"x", nil, int32(-5)})
	if err != nil {
		t.Fatal(err)
	}
	want := "-- $1\nSELECT '$1', E'\\'$1', \"$1\", $q$ $1 $q$, $$ $2 $$, a$1, E'x', /* $1 /* $2 */ $1 */ NULL, -(-5) -- $2"
	if got != want {
		t.Fatalf("bound\n%s\nwant\n%s", got, want)
	}
	if _, err := bindLiterals("SELECT $2", []any{"x"}); err == nil || !strings.Contains(err.Error(), "$2") {
		t.Fatalf("a placeholder past the parameters: %v", err)
	}
	if _, err := bindLiterals("SELECT $1", []any{"a\x00b"}); !errors.Is(err, ErrUnprintable) || !strings.Contains(err.Error(), "$1") {
		t.Fatalf("a NUL: %v, want ErrUnprintable naming $1", err)
	}
	if got, err := bindLiterals("SELECT CAST($1 AS jsonb), $2", []any{json.RawMessage(`{"a":"'"}`), int64(7)}); err != nil || got != `SELECT CAST(E'{"a":"''"}' AS jsonb), 7` {
		t.Fatalf("a jsonb parameter: %s, %v", got, err)
	}
	if got, _ := bindLiterals("SELECT $1", []any{"é\n'\\\U0001F600"}); got != `SELECT E'\u00E9\u000A''\\\U0001F600'` {
		t.Fatalf("escaped: %s", got)
	}
}
