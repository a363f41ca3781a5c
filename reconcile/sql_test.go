package reconcile_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/reconcile"
	"github.com/covmirror/covmirror/recovery"
)

// dialect is one SQL sink server: its handle, a fresh table's name and
// its placeholder spelling.
type dialect struct {
	db    *sql.DB
	table string
	// args spells the four bound parameters (topic, partition, start, end).
	args [4]string
	// ins spells an insert's three.
	ins   string
	del   string // part = ? AND batch_id = ?
	sleep string
	// dual is what a SELECT without a table needs: " FROM DUAL" or "".
	dual string
}

// uses is a WHERE clause binding all four parameters and always true, for
// a hostile query that needs no table.
func (d dialect) uses() string {
	return d.dual + fmt.Sprintf(" WHERE %s IS NOT NULL AND %s IS NOT NULL AND %s IS NOT NULL AND %s IS NOT NULL", d.args[0], d.args[1], d.args[2], d.args[3])
}

func pgDialect(t *testing.T) dialect {
	db := pgDB(t)
	table := `"` + pgSchema(t) + `".sink`
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (topic text, part int, batch_id bigint)"); err != nil {
		t.Fatal(err)
	}
	return dialect{db: db, table: table, args: [4]string{"$1::text", "$2::int", "$3::bigint", "$4::bigint"}, ins: "$1, $2, $3", del: "part = $1 AND batch_id = $2", sleep: "pg_sleep(5)"}
}

func (d dialect) idsQuery() string {
	return fmt.Sprintf("SELECT batch_id FROM %s WHERE topic = %s AND part = %s AND batch_id >= %s AND batch_id < %s", d.table, d.args[0], d.args[1], d.args[2], d.args[3])
}

func (d dialect) countQuery() string {
	return strings.Replace(d.idsQuery(), "SELECT batch_id", "SELECT COUNT(DISTINCT batch_id)", 1)
}

func (d dialect) insert(t testing.TB, p int32, ids ...uint64) {
	t.Helper()
	for _, id := range ids {
		if _, err := d.db.ExecContext(ctx, "INSERT INTO "+d.table+" VALUES ("+d.ins+")", "t", p, int64(id)); err != nil {
			t.Fatal(err)
		}
	}
}

func (d dialect) checker(t testing.TB, query string, o reconcile.SQLOptions) reconcile.Checker {
	t.Helper()
	c, err := reconcile.NewSQL(d.db, query, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fill writes every committed batch to the sink and records its coverage,
// then deletes the batches of deleted from the sink.
func fill(t *testing.T, d dialect, sink string) *postgres.Tier {
	tier := durableTier(t)
	for _, p := range []int32{0, 1} {
		for _, r := range committed {
			for id := r.Start; id < r.End; id++ {
				d.insert(t, p, id)
			}
		}
	}
	record(t, tier, sink, "ckpt-1")
	record(t, tier, coverage.RawSink, "ckpt-raw") // what the replays are read from
	for p, ids := range deleted {
		for _, id := range ids {
			q := "DELETE FROM " + d.table + " WHERE " + d.del
			if _, err := d.db.ExecContext(ctx, q, p, int64(id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return tier
}

// scenario: deleted batches are reported exactly, in full, sampled and by
// count; a replay closes them.
func scenario(t *testing.T, d dialect) {
	const sink = "sqlsink"
	tier := fill(t, d, sink)
	before, err := tier.Coverage(ctx, durable.Filter{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}

	full := d.checker(t, d.idsQuery(), reconcile.SQLOptions{})
	rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{sink: full}, fast())
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "full", rep.Absent, wantAbsent(sink))
	fullRep := rep

	// By count, a short range is wholly suspect: the pieces holding a
	// deleted batch.
	counted := d.checker(t, d.countQuery(), reconcile.SQLOptions{Count: true})
	rep, err = reconcile.Run(ctx, tier, map[string]reconcile.Checker{sink: counted}, fast())
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p int32, s, e uint64) reconcile.Row {
		return reconcile.Row{Sink: sink, Topic: "t", Partition: p, Start: s, End: e, Kind: reconcile.KindClaimedAbsent}
	}
	sameRows(t, "counted", rep.Absent, []reconcile.Row{abs(0, 0, 5), abs(0, 20, 25), abs(0, 45, 50), abs(0, 60, 65), abs(1, 5, 10)})

	seed := testseed.Seed(t)
	s := &spy{Checker: full}
	o := fast()
	o.Sample, o.Seed = 3, seed
	rep, err = reconcile.Run(ctx, tier, map[string]reconcile.Checker{sink: s}, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seed != seed || rep.Checked[0].Checks != 6 {
		t.Fatalf("sampled run: seed %d (want %d), %d checks (want 3 per destination)", rep.Seed, seed, rep.Checked[0].Checks)
	}
	sameRows(t, "sampled", rep.Absent, s.expectSampled(sink))
	again, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{sink: full}, o)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "sampled again with the same seed", again.Absent, rep.Absent)

	// Nothing was retracted.
	after, err := tier.Coverage(ctx, durable.Filter{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	for dst, set := range before {
		if !after[dst].Equal(set) {
			t.Fatalf("coverage of %v changed: %v then %v", dst, set, after[dst])
		}
	}

	// Replay the tasks: write the batches back and record them again.
	tasks := reconcile.Tasks(fullRep, "", 0)
	if len(tasks) != len(wantAbsent(sink)) {
		t.Fatalf("tasks %+v, want one replay per claimed-absent row", tasks)
	}
	for _, task := range tasks {
		if task.Kind != recovery.KindReplay {
			t.Fatalf("task %+v is not a replay", task)
		}
		for id := task.Range.Start; id < task.Range.End; id++ {
			d.insert(t, task.Destination.Partition, id)
		}
	}
	record(t, tier, sink, "ckpt-2")
	rep, err = reconcile.Run(ctx, tier, map[string]reconcile.Checker{sink: full}, fast())
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "after the replay", rep.Absent, nil)
}

// hostile: a query that fails, times out or answers outside the range is
// an error naming the sink, and nothing of that sink is reported absent,
// while a healthy sink beside it is still reported.
func hostile(t *testing.T, d dialect) {
	tier := fill(t, d, "good")
	for _, bad := range []string{"failing", "slow", "outside", "outside-count", "null"} {
		record(t, tier, bad, "ckpt-"+bad)
	}
	good := d.checker(t, d.idsQuery(), reconcile.SQLOptions{})
	cases := []struct {
		sink, query string
		opts        reconcile.SQLOptions
		want        string
		is          error
	}{
		{"failing", "SELECT batch_id FROM no_such_table" + strings.TrimPrefix(d.uses(), d.dual), reconcile.SQLOptions{}, "no_such_table", nil},
		{"slow", "SELECT " + d.sleep + d.uses(), reconcile.SQLOptions{Timeout: 200 * time.Millisecond}, "deadline", context.DeadlineExceeded},
		{"outside", strings.Replace(d.idsQuery(), "SELECT batch_id", "SELECT batch_id + 100", 1), reconcile.SQLOptions{}, "outside", reconcile.ErrOutOfRange},
		{"outside-count", "SELECT 1000000" + d.uses(), reconcile.SQLOptions{Count: true}, "counted", reconcile.ErrOutOfRange},
		{"null", "SELECT NULL" + d.uses(), reconcile.SQLOptions{}, "NULL", reconcile.ErrOutOfRange},
	}
	for _, c := range cases {
		t.Run(c.sink, func(t *testing.T) {
			bad := d.checker(t, c.query, c.opts)
			start := time.Now()
			rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"good": good, c.sink: bad}, fast())
			mustFailNaming(t, rep, err, c.sink, c.want)
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("error does not wrap %v: %v", c.is, err)
			}
			var ce *reconcile.CheckError
			if !errors.As(err, &ce) || ce.Sink != c.sink {
				t.Fatalf("error is not a *CheckError of %s: %v", c.sink, err)
			}
			if time.Since(start) > 4*time.Second {
				t.Fatalf("the run took %v: the timeout did not cut the query", time.Since(start))
			}
			sameRows(t, "the good sink beside it", rep.Absent, wantAbsent("good"))
		})
	}
}

func TestPostgresSink(t *testing.T) { scenario(t, pgDialect(t)) }

func TestPostgresHostile(t *testing.T) { hostile(t, pgDialect(t)) }

// Counted distinct, a batch written twice by an at-least-once sink does not
// make up for a lost one (COUNT(*) would count 5 rows in [0,5) and hide
// batch 3).
func TestPostgresCountDistinctFindsALossBesideADuplicate(t *testing.T) {
	d := pgDialect(t)
	tier := durableTier(t)
	appendRanges(t, tier, "c1", coverage.Destination{Sink: "s", Topic: "t"}, coverage.Range{Start: 0, End: 5})
	d.insert(t, 0, 0, 1, 2, 2, 4) // 3 lost, 2 written twice
	c := d.checker(t, d.countQuery(), reconcile.SQLOptions{Count: true})
	rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"s": c}, fast())
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "counted distinct", rep.Absent, []reconcile.Row{{Sink: "s", Topic: "t", Partition: 0, Start: 0, End: 5, Kind: reconcile.KindClaimedAbsent}})
}
