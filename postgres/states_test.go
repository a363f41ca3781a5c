package postgres

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
)

// TestConformanceObjectOnBlobs runs the durable tiers' suite, the gap
// states among it, on the object tier sitting on the blobs table.
func TestConformanceObjectOnBlobs(t *testing.T) {
	durabletest.Run(t, durabletest.Harness{Light: true, New: func(t *testing.T) func(t *testing.T) durable.Tier {
		schema := freshSchema(t)
		return func(t *testing.T) durable.Tier {
			s, err := object.Open(ctx, object.Options{Blobs: openTier(t, schema).Blobs()})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}})
}

var stateAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func stateEvent(rng *rand.Rand, d coverage.Destination) gapstate.Event {
	start := uint64(rng.IntN(1000))
	return gapstate.Event{ID: gapstate.NewID(), Destination: d, Range: coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(9))},
		State: gapstate.States[rng.IntN(len(gapstate.States))], Reason: "r", By: "pod-a", At: stateAt.Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)}
}

// statesByID reads every state of f, failing on an error or an ID read twice.
func statesByID(t *testing.T, s durable.StateStore, f durable.Filter) map[string]gapstate.Event {
	t.Helper()
	got, err := s.States(ctx, f)
	if err != nil {
		t.Fatalf("States(%+v): %v", f, err)
	}
	out := map[string]gapstate.Event{}
	for _, e := range got {
		if _, dup := out[e.ID]; dup {
			t.Fatalf("States(%+v): %q read twice", f, e.ID)
		}
		out[e.ID] = e
	}
	return out
}

func stateRows(t *testing.T, schema string) int {
	t.Helper()
	var n int
	if err := adminPool(t).QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "gap_states"}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// prevLayoutDDL is the schema as the tier created it before it kept gap
// states: the tables and indexes of then, with %[1]s the quoted schema.
var prevLayoutDDL = append(append([]string{}, unindexedDDL...),
	`CREATE TABLE IF NOT EXISTS %[1]s."blobs" ("key" text COLLATE "C" NOT NULL, "version" bigint NOT NULL, "data" bytea NOT NULL, PRIMARY KEY ("key"))`,
	`CREATE INDEX IF NOT EXISTS "checkpoints_writer_committed" ON %[1]s."checkpoints" ("writer", "committed_at")`,
	`CREATE INDEX IF NOT EXISTS "coverage_destination" ON %[1]s."coverage" ("topic", "partition", "sink")`)

// TestStatesOldSchemaGainsTable: a schema made by the layout before gap
// states, with coverage in it, gains the gap_states table and its index
// on Open, and nothing else changes: the other tables' shape, their
// indexes, the coverage. States then round-trip; a second Open writes
// nothing.
func TestStatesOldSchemaGainsTable(t *testing.T) {
	schema := freshSchema(t)
	for _, s := range prevLayoutDDL {
		exec(t, fmt.Sprintf(s, pgx.Identifier{schema}.Sanitize()))
	}
	exec(t, "INSERT INTO "+pgx.Identifier{schema, "coverage"}.Sanitize()+` SELECT 'lake', 't', g % 5, int8multirange(int8range(g * 10, g * 10 + 5)), 'pod', now() FROM generate_series(0, 49) g`)
	shape, idx := tableShape(t, schema), indexesOf(t, schema)
	tier := openTier(t, schema)
	gotShape, gotIdx := tableShape(t, schema), indexesOf(t, schema)
	if withoutTable(gotShape, "gap_states") != shape || !strings.Contains(gotShape, "gap_states decided_at timestamp with time zone true") {
		t.Fatalf("Open changed the tables there, or added no gap_states:\n%s\nnow:\n%s", shape, gotShape)
	}
	if withoutTable(gotIdx, "gap_states") != idx ||
		!strings.Contains(gotIdx, "CREATE INDEX gap_states_destination ON "+schema+".gap_states USING btree (topic, partition, sink)") ||
		!strings.Contains(gotIdx, "CREATE UNIQUE INDEX gap_states_pkey ON "+schema+".gap_states USING btree (id)") {
		t.Fatalf("Open changed the indexes there, or indexed gap_states otherwise:\n%s\nnow:\n%s", idx, gotIdx)
	}
	cov, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil || len(cov) != 5 {
		t.Fatalf("coverage after Open: %d destinations, %v; want 5", len(cov), err)
	}
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 1))
	e := stateEvent(rng, coverage.Destination{Sink: "lake", Topic: "t", Partition: 2})
	if err := tier.AppendStates(ctx, []gapstate.Event{e}); err != nil {
		t.Fatal(err)
	}
	if got := statesByID(t, openTier(t, schema), durable.Filter{}); len(got) != 1 || got[e.ID].Range != e.Range {
		t.Fatalf("states after the migration: %v", got)
	}
	if now, err := tier.Coverage(ctx, durable.Filter{}); err != nil || len(now) != 5 || now[e.Destination].String() != cov[e.Destination].String() {
		t.Fatalf("a gap state changed the coverage: %v (%v), was %v", now[e.Destination], err, cov[e.Destination])
	}
	if again := indexesOf(t, schema); again != gotIdx {
		t.Fatalf("a second Open changed the indexes:\n%s\nnow:\n%s", gotIdx, again)
	}
}

// TestStatesShapeRefused: a gap_states table of another shape, or whose
// names compare under a collation that is not deterministic, is refused
// and left as it is.
func TestStatesShapeRefused(t *testing.T) {
	cols := `sink text NOT NULL, topic text NOT NULL, partition int4 NOT NULL, range_start int8 NOT NULL, range_end int8 NOT NULL,
		state text NOT NULL, reason text NOT NULL, decided_by text NOT NULL`
	for _, c := range []struct{ name, ddl, want string }{
		{"other type", `CREATE TABLE %[1]s.gap_states (id text PRIMARY KEY, ` + cols + `, decided_at timestamp NOT NULL)`, "gap_states.decided_at is timestamp without time zone"},
		{"no key", `CREATE TABLE %[1]s.gap_states (id text NOT NULL, ` + cols + `, decided_at timestamptz NOT NULL)`, "gap_states has primary key [], want [id]"},
		{"folding sink", `CREATE TABLE %[1]s.gap_states (id text PRIMARY KEY, sink text COLLATE %[1]s.ci NOT NULL, topic text NOT NULL, partition int4 NOT NULL,
			range_start int8 NOT NULL, range_end int8 NOT NULL, state text NOT NULL, reason text NOT NULL, decided_by text NOT NULL, decided_at timestamptz NOT NULL)`,
			"gap_states.sink has collation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t)
			q := pgx.Identifier{schema}.Sanitize()
			exec(t, "CREATE SCHEMA "+q)
			exec(t, "CREATE COLLATION "+q+".ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
			exec(t, fmt.Sprintf(c.ddl, q))
			before := shapeOf(t, schema)
			_, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema})
			if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("open: %v, want ErrSchemaMismatch naming %q", err, c.want)
			}
			if after := shapeOf(t, schema); after != before {
				t.Fatalf("the schema changed:\n%s\nnow:\n%s", before, after)
			}
		})
	}
}

// TestStatesNamesExact: names that differ by case, a space, an accent or
// a quote are distinct destinations to States' filter.
func TestStatesNamesExact(t *testing.T) {
	tier := openTier(t, freshSchema(t))
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 2))
	names := []string{"lake", "LAKE", "lake ", "läke", `la"ke`, "la'ke"}
	var events []gapstate.Event
	for _, sink := range names {
		for _, topic := range names {
			events = append(events, stateEvent(rng, coverage.Destination{Sink: sink, Topic: topic, Partition: 1}))
		}
	}
	if err := tier.AppendStates(ctx, events); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		for _, f := range []durable.Filter{{Sink: name}, {Topic: name}, {Partitions: []coverage.TopicPartition{{Topic: name, Partition: 1}}}} {
			got := statesByID(t, tier, f)
			if len(got) != len(names) {
				t.Fatalf("States(%+v): %d events, want %d", f, len(got), len(names))
			}
			for _, e := range got {
				if !f.Match(e.Destination) {
					t.Fatalf("States(%+v) returned %v", f, e.Destination)
				}
			}
		}
	}
}

// TestStatesAnswerLostOneCopy: the server commits an AppendStates and the
// answer is lost (the proxy drops it and closes the connection); the
// tier's retry on a new connection, and the caller's, leave one row per
// event.
func TestStatesAnswerLostOneCopy(t *testing.T) {
	schema := freshSchema(t)
	proxy, pool := newCutProxy(t, "gap_states")
	tier, err := Open(ctx, Options{Pool: pool, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 3))
	var events []gapstate.Event
	for i := range 5 {
		events = append(events, stateEvent(rng, coverage.Destination{Sink: "lake", Topic: "t", Partition: int32(i)}))
	}
	proxy.armed.Store(true)
	err = tier.AppendStates(ctx, events)
	if proxy.cuts.Load() != 1 {
		t.Fatalf("the proxy cut %d answers, want 1 (a server behind TLS?)", proxy.cuts.Load())
	}
	t.Logf("the append whose answer was lost: %v", err)
	if err := tier.AppendStates(ctx, events); err != nil {
		t.Fatalf("the caller's retry: %v", err)
	}
	if n := stateRows(t, schema); n != len(events) {
		t.Fatalf("%d rows after a lost answer and retries, want %d", n, len(events))
	}
	if got := statesByID(t, openTier(t, schema), durable.Filter{}); len(got) != len(events) {
		t.Fatalf("%d events read, want %d", len(got), len(events))
	}
}

// TestStatesFailedWriteWritesNothing: a write the server fails part-way
// (a trigger raising on its third row) commits none of its rows: States
// returns only what landed before. A row no event can be, written behind
// the tier's back, fails the read, never read as an event nor left out.
func TestStatesFailedWriteWritesNothing(t *testing.T) {
	schema := freshSchema(t)
	tier := openTier(t, schema)
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 4))
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	first := []gapstate.Event{stateEvent(rng, d), stateEvent(rng, d)}
	if err := tier.AppendStates(ctx, first); err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	exec(t, "CREATE SEQUENCE "+q+".n")
	exec(t, "CREATE FUNCTION "+q+`.fail_third() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('`+schema+`.n') = 3 THEN RAISE EXCEPTION 'injected: the third row fails'; END IF;
	RETURN NEW;
END $$`)
	exec(t, "CREATE TRIGGER fail_third BEFORE INSERT ON "+q+".gap_states FOR EACH ROW EXECUTE FUNCTION "+q+".fail_third()")
	second := []gapstate.Event{stateEvent(rng, d), stateEvent(rng, d), stateEvent(rng, d), stateEvent(rng, d)}
	if err := tier.AppendStates(ctx, second); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("an append whose third row fails: %v, want the injected error", err)
	}
	if got := statesByID(t, tier, durable.Filter{}); len(got) != len(first) {
		t.Fatalf("after a failed append: %d events, want the %d of before", len(got), len(first))
	}
	if err := tier.AppendStates(ctx, second); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if got := statesByID(t, tier, durable.Filter{}); len(got) != len(first)+len(second) {
		t.Fatalf("after the retry: %d events, want %d", len(got), len(first)+len(second))
	}
	exec(t, "INSERT INTO "+q+`.gap_states VALUES ('bad', 'lake', 't', 0, 5, 10, 'covered', 'r', 'x', now())`)
	if got, err := tier.States(ctx, durable.Filter{}); !errors.Is(err, coverage.ErrCorrupt) || got != nil || !strings.Contains(err.Error(), "covered") {
		t.Fatalf("States over a row that is no event = %v, %v; want ErrCorrupt naming it", got, err)
	}
}

// TestStatesIndexServesPartitionReads: a read of one partition's states,
// by Topic and Partition or by Partitions, goes through the index by
// (topic, partition, sink), not a scan of the table.
func TestStatesIndexServesPartitionReads(t *testing.T) {
	schema := freshSchema(t)
	tier := openTier(t, schema)
	exec(t, "INSERT INTO "+pgx.Identifier{schema, "gap_states"}.Sanitize()+
		` SELECT 'e' || g, 'lake', 't' || (g % 50), g % 100, g, g + 1, 'refused', 'r', 'x', now() FROM generate_series(1, 50000) g`)
	exec(t, "ANALYZE "+pgx.Identifier{schema, "gap_states"}.Sanitize())
	one := int32(7)
	for _, f := range []durable.Filter{{Topic: "t7", Partition: &one}, {Partitions: []coverage.TopicPartition{{Topic: "t7", Partition: 7}, {Topic: "t8", Partition: 8}}},
		{Sink: "lake", Partitions: []coverage.TopicPartition{{Topic: "t7", Partition: 7}, {Topic: "t7", Partition: 7}}}} {
		rows, err := adminPool(t).Query(ctx, "EXPLAIN "+statesSQL(tier.states, f), filterArgs(f)...)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if text := strings.Join(plan, "\n"); !strings.Contains(text, "gap_states_destination") {
			t.Fatalf("States(%+v) is not served by the index:\n%s", f, text)
		}
		// g = p mod 100 for partition p of topic t(p mod 50): 500 rows each.
		if got, want := len(statesByID(t, tier, f)), 500*max(1, len(f.PartitionSet())); got != want {
			t.Fatalf("States(%+v): %d events, want %d", f, got, want)
		}
	}
}
