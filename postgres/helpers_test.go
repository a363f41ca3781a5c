package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

var ctx = context.Background()

var admin struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// adminPool is one pool on the test PostgreSQL for the tests' own SQL. An
// unreachable server fails the test: it is never skipped.
func adminPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	admin.once.Do(func() {
		admin.pool, admin.err = pgxpool.New(ctx, catalogtest.PostgresURL())
		if admin.err == nil {
			admin.err = admin.pool.Ping(ctx)
		}
	})
	if admin.err != nil {
		t.Fatal(catalogtest.Unreachable(admin.err))
	}
	return admin.pool
}

// freshSchema is a schema name no other test uses, dropped with everything
// in it when the test ends. It is not created.
func freshSchema(t testing.TB) string {
	t.Helper()
	pool := adminPool(t)
	schema := catalogtest.Namespace()
	t.Cleanup(func() {
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// openTier opens a Tier with its own pool on schema, as another process
// would, closed when the test ends.
func openTier(t testing.TB, schema string) *Tier {
	t.Helper()
	adminPool(t)
	tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tier.Close)
	return tier
}

// exec runs the tests' own SQL.
func exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := adminPool(t).Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
