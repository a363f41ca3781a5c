package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/postgres"
)

// withChildPostgresMirror runs role on a Mirror into the PostgreSQL tier
// in schema on the test server (catalogtest.PostgresURL, which the child
// reads from the environment it inherits), and prints the tier's retries
// for the parent.
func withChildPostgresMirror(schema string, role func(*Mirror) error) error {
	tier, err := postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: schema})
	if err != nil {
		return err
	}
	defer tier.Close()
	if err := runChildMirror(tier, role); err != nil {
		return err
	}
	fmt.Printf("postgres-stats retries=%d\n", tier.Retries())
	return nil
}

// postgresTier opens the PostgreSQL tier in a fresh schema on the server
// at url, on a pool the test also uses for its own SQL; the schema is
// dropped with everything in it when the test ends. A server that does not
// answer fails the test: it is never skipped.
func postgresTier(t *testing.T, url string) (*postgres.Tier, string, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgxpool.New(ctx, url)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	t.Cleanup(pool.Close)
	schema := catalogtest.Namespace()
	t.Cleanup(func() {
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	tier, err := postgres.Open(ctx, postgres.Options{Pool: pool, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return tier, schema, pool
}

// TestEightProcessesCheckpointPostgres: eight owners of the same three
// destinations, each an OS process with its own local tier and its own
// pool, checkpoint 100 times each at once into one schema. Every
// checkpoint must land, once, and the rows must hold exactly the union of
// the owners' ranges; the transactions PostgreSQL rolled back and the
// owners ran again are reported.
func TestEightProcessesCheckpointPostgres(t *testing.T) {
	const owners = 8
	tier, schema, pool := postgresTier(t, catalogtest.PostgresURL())
	start := time.Now()
	var retries int64
	for w, out := range runOwners(t, owners, childPGSchema+"="+schema) {
		retries += childCounters(t, fmt.Sprintf("owner %d", w), out, "postgres-stats", "retries")["retries"]
	}
	t.Logf("%d owners x %d checkpoints on 3 shared rows in %s: %d transactions rolled back by the server and run again",
		owners, checkpointsPerOwner, time.Since(start).Round(time.Millisecond), retries)
	requireExactly(t, tier, ownersUnion(owners))

	// Every checkpoint's name committed with its ranges, once.
	perWriter := map[string]int64{}
	rows, err := pool.Query(ctx, "SELECT writer, count(*) FROM "+pgx.Identifier{schema, "checkpoints"}.Sanitize()+" GROUP BY writer")
	if err != nil {
		t.Fatal(err)
	}
	var writer string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&writer, &n}, func() error { perWriter[writer] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	for w := range owners {
		if got := perWriter[fmt.Sprintf("owner-%d", w)]; got != checkpointsPerOwner || len(perWriter) != owners {
			t.Fatalf("checkpoint names per writer %v, want %d for each of %d owners", perWriter, checkpointsPerOwner, owners)
		}
	}
}

// TestCrashDuringPostgresCheckpoints kills a process checkpointing into
// the PostgreSQL tier 30 times at random moments (before, inside and after
// its transactions). After every kill the rows must be readable and hold
// only ranges the child had recorded, and the next checkpoint from the
// same local tier must bring them up to it.
func TestCrashDuringPostgresCheckpoints(t *testing.T) {
	kills := 30
	if testing.Short() {
		kills = 5
	}
	tier, schema, _ := postgresTier(t, catalogtest.PostgresURL())
	crashInto(t, tier, kills, childPGSchema+"="+schema)
}
