package mirror

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/postgres"
)

// TestPositionsCommitWithTheCheckpointPostgres: with the durable tier and
// the position store in one PostgreSQL schema, a checkpoint saves the
// buffered source positions in its own transaction. A checkpoint the
// database refuses (a trigger fails its coverage upsert) leaves neither
// the coverage nor the positions, and keeps both for the next Sync, which
// commits both; a position of a source not configured as stored is
// dropped, not retried forever.
func TestPositionsCommitWithTheCheckpointPostgres(t *testing.T) {
	url := catalogtest.PostgresURL()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	defer conn.Close(ctx)
	schema := catalogtest.Namespace()
	t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
	opts := postgres.Options{URL: url, Schema: schema}
	tier, err := postgres.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	positions, err := postgres.OpenPositions(ctx, opts, coverage.Source{Name: "files", Regime: coverage.Stored},
		coverage.Source{Name: "orders", Regime: coverage.BrokerManaged})
	if err != nil {
		t.Fatal(err)
	}
	defer positions.Close()
	l, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Local: l, Durable: tier, Writer: "pod-a", Positions: positions})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "files"}
	record(t, m, raw, 0, 10)
	for _, p := range []coverage.Position{
		{Source: "files", Partition: 0, Cursor: []byte("offset-10"), Batch: 9},
		{Source: "orders", Partition: 0, Cursor: []byte("x"), Batch: 10},
	} {
		if err := m.SavePosition(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	coverageTable := pgx.Identifier{schema, "coverage"}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE FUNCTION `+pgx.Identifier{schema, "refuse"}.Sanitize()+`() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON `+coverageTable+` FOR EACH ROW EXECUTE FUNCTION `+pgx.Identifier{schema, "refuse"}.Sanitize()+`()`); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err == nil {
		t.Fatal("a checkpoint whose coverage upsert the database refused succeeded")
	}
	if got := storedPositions(t, positions); len(got) != 0 {
		t.Fatalf("positions saved by a checkpoint that rolled back: %v", got)
	}
	if cov, err := tier.Coverage(ctx, durable.Filter{Sink: raw.Sink}); err != nil || len(cov) != 0 {
		t.Fatalf("coverage after the refused checkpoint: %v, %v", cov, err)
	}
	if _, err := conn.Exec(ctx, "DROP TRIGGER refuse ON "+coverageTable); err != nil {
		t.Fatal(err)
	}
	sum, err := m.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Positions != 1 {
		t.Fatalf("the checkpoint saved %d positions, want the stored source's one", sum.Positions)
	}
	got := storedPositions(t, positions)
	if len(got) != 1 || got[0].Batch != 9 || string(got[0].Cursor) != "offset-10" {
		t.Fatalf("positions after the checkpoint: %v", got)
	}
	// One transaction wrote both: the rows share their inserting
	// transaction's id.
	var ckptTx, posTx string
	if err := conn.QueryRow(ctx, "SELECT xmin::text FROM "+pgx.Identifier{schema, "checkpoints"}.Sanitize()+" WHERE writer = 'pod-a'").Scan(&ckptTx); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT xmin::text FROM "+pgx.Identifier{schema, "positions"}.Sanitize()).Scan(&posTx); err != nil {
		t.Fatal(err)
	}
	if ckptTx != posTx {
		t.Fatalf("the checkpoint was written by transaction %s, the position by %s: not together", ckptTx, posTx)
	}
	cov, err := tier.Coverage(ctx, durable.Filter{Sink: raw.Sink})
	if err != nil || cov[raw] == nil {
		t.Fatalf("raw's coverage after the checkpoint: %v, %v", cov, err)
	}
	if p, ok := coverage.SafePosition(got, cov[raw]); !ok || p.Batch != 9 {
		t.Fatalf("the safe position over raw's committed coverage: %v, %v", p, ok)
	}
	// Nothing left buffered: the broker-managed one was dropped.
	if sum, err := m.Checkpoint(ctx); err != nil || sum.Positions != 0 {
		t.Fatalf("a second checkpoint: %+v, %v", sum, err)
	}
}

func storedPositions(t *testing.T, p *postgres.Positions) []coverage.Position {
	t.Helper()
	got, err := p.Positions(ctx, "files", 0)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
