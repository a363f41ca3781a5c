package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
)

// TestAppendAfterConnectionsDropped: the server ends every connection of
// the pool while they are idle (a restart, a failover, an idle timeout);
// the next Append (or read) must take a fresh connection, not fail on a dead one,
// which would fail a checkpoint against a server that is up. The pool
// never pings (as a pool whose connections are used within a second never
// does), and holds several idle connections, all dead. In both layouts:
// the deltas layout's blobs pass dead connections over too.
func TestAppendAfterConnectionsDropped(t *testing.T) {
	for _, layout := range []Layout{LayoutRows, LayoutDeltas} {
		t.Run(string(layout), func(t *testing.T) { testAppendAfterConnectionsDropped(t, layout) })
	}
}

func testAppendAfterConnectionsDropped(t *testing.T, layout Layout) {
	schema := freshSchema(t)
	app := "covmirror_test_" + schema
	cfg, err := pgxpool.ParseConfig(catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns = 4
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tier, err := Open(ctx, Options{Pool: pool, Schema: schema, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	var want []coverage.Range
	for round := range uint64(3) {
		// Fill the pool with idle connections, then have the server end them.
		var held []*pgxpool.Conn
		for range cfg.MaxConns {
			c, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Release()
		}
		exec(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var n int
			if err := adminPool(t).QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d connections still there after pg_terminate_backend", round, n)
			}
		}
		if round == 1 {
			// Reads too take a live connection, not a dead one.
			if _, err := tier.Landed(ctx, "pod-a", "c0"); err != nil {
				t.Fatalf("landed with the server up and the pool's connections ended: %v", err)
			}
			if _, err := tier.Coverage(ctx, durable.Filter{}); err != nil {
				t.Fatalf("coverage with the server up and the pool's connections ended: %v", err)
			}
			if _, err := tier.LastWrites(ctx, durable.Filter{}); err != nil {
				t.Fatalf("last writes with the server up and the pool's connections ended: %v", err)
			}
		}
		r := coverage.Range{Start: round * 10, End: round*10 + 5}
		c := durable.Checkpoint{Name: "c" + string(rune('0'+round)), Writer: "pod-a",
			Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}}
		if err := tier.Append(ctx, c); err != nil {
			t.Fatalf("round %d: append with the server up and the pool's connections ended: %v", round, err)
		}
		want = append(want, r)
		got, err := tier.Coverage(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if got[d] == nil || !slices.Equal(got[d].Ranges(), want) {
			t.Fatalf("round %d: covers %v, want %v", round, got[d], want)
		}
	}
}
