package postgres

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// clockTier opens a Tier on schema whose clock is *now, keeping names for
// retention.
func clockTier(t *testing.T, schema string, now *time.Time, retention time.Duration) *Tier {
	t.Helper()
	tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema, FoldEvery: -1, NameRetention: retention, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tier.Close)
	return tier
}

func nameCount(t *testing.T, schema, writer string) int {
	t.Helper()
	var n int
	if err := adminPool(t).QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "checkpoints"}.Sanitize()+" WHERE $1 = '' OR writer = $1", writer).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNamesKeptForRetention: a writer appends at random times; after
// each append, every one of its names younger than the retention is
// Landed, and one reused with another payload is ErrNameReused; every
// name older than the retention by the time of an append is gone (Landed
// false), and appending it again writes its ranges again, which changes
// no coverage.
func TestNamesKeptForRetention(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	schema := freshSchema(t)
	const retention = time.Hour
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tier := clockTier(t, schema, &now, retention)
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	type named struct {
		c  durable.Checkpoint
		at time.Time
	}
	var done []named
	m := model{}
	for i := range 60 {
		now = now.Add(time.Duration(rng.IntN(12)) * time.Minute)
		c := durable.Checkpoint{Writer: "pod", Name: fmt.Sprint(i), Ranges: oneRange(d, uint64(i*10), uint64(i*10+1+rng.IntN(5)))}
		if err := tier.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
		m.add(c.Ranges)
		done = append(done, named{c, now})
		for _, n := range done {
			age := now.Sub(n.at)
			ok, err := tier.Landed(ctx, "pod", n.c.Name)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case age <= retention && !ok:
				t.Fatalf("seed %d: name %s, %v old (inside the retention %v), not Landed", seed, n.c.Name, age, retention)
			case age > retention && ok:
				t.Fatalf("seed %d: name %s, %v old (past the retention %v), still kept after an append", seed, n.c.Name, age, retention)
			}
		}
	}
	m.check(t, fmt.Sprintf("seed %d: after the appends", seed), tier)
	// Inside the bound, a name is bound to its payload.
	last := done[len(done)-1].c
	reused := last
	reused.Ranges = oneRange(d, 100000, 100001)
	if err := tier.Append(ctx, reused); !errors.Is(err, durable.ErrNameReused) {
		t.Fatalf("seed %d: a name inside the retention reused with another payload: %v, want ErrNameReused", seed, err)
	}
	// Past it, appending a pruned name again is a duplicate union.
	now = now.Add(retention + time.Minute)
	if err := tier.Append(ctx, durable.Checkpoint{Writer: "pod", Name: "after", Ranges: oneRange(d, 5, 6)}); err != nil {
		t.Fatal(err)
	}
	m.add(oneRange(d, 5, 6))
	if ok, err := tier.Landed(ctx, "pod", last.Name); ok || err != nil {
		t.Fatalf("seed %d: the last name past the retention: %v, %v, want pruned", seed, ok, err)
	}
	for _, n := range done[:5] {
		if err := tier.Append(ctx, n.c); err != nil {
			t.Fatalf("seed %d: %s appended again past the retention: %v", seed, n.c.Name, err)
		}
	}
	m.check(t, fmt.Sprintf("seed %d: after appending pruned names again", seed), tier)
	if n := nameCount(t, schema, "pod"); n != 6 {
		t.Fatalf("seed %d: %d names kept, want 6 (the last append's and the five appended again)", seed, n)
	}
}

// TestPruneBatches: an Append deletes at most PruneBatch of its writer's
// expired names and none of another writer's; Fold of the whole table
// deletes every writer's, and a negative retention keeps them all.
func TestPruneBatches(t *testing.T) {
	schema := freshSchema(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	keepAll := clockTier(t, schema, &now, -1)
	tier := clockTier(t, schema, &now, time.Minute)
	ckpts := pgx.Identifier{schema, "checkpoints"}.Sanitize()
	exec(t, "INSERT INTO "+ckpts+" SELECT w, 'old-' || g, 'd', '{}', 0, $1 FROM generate_series(1, $2) g, unnest('{pod,gone}'::text[]) w",
		now.Add(-time.Hour), PruneBatch+44)
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	if err := keepAll.Append(ctx, durable.Checkpoint{Writer: "pod", Name: "kept", Ranges: oneRange(d, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if n := nameCount(t, schema, "pod"); n != PruneBatch+45 {
		t.Fatalf("with a negative retention an Append deleted names: %d left, want %d", n, PruneBatch+45)
	}
	if err := tier.Append(ctx, durable.Checkpoint{Writer: "pod", Name: "new", Ranges: oneRange(d, 1, 2)}); err != nil {
		t.Fatal(err)
	}
	if pod, gone := nameCount(t, schema, "pod"), nameCount(t, schema, "gone"); pod != 44+2 || gone != PruneBatch+44 {
		t.Fatalf("after one Append: %d names of its writer, %d of another; want %d and %d", pod, gone, 44+2, PruneBatch+44)
	}
	if _, err := keepAll.Fold(ctx, durable.Filter{}); err != nil {
		t.Fatal(err)
	}
	if n := nameCount(t, schema, ""); n != 44+2+PruneBatch+44 {
		t.Fatalf("Fold with a negative retention left %d names, want all %d", n, 44+2+PruneBatch+44)
	}
	if _, err := tier.Fold(ctx, durable.Filter{}); err != nil {
		t.Fatal(err)
	}
	if n := nameCount(t, schema, ""); n != 2 {
		t.Fatalf("after Fold of the whole table: %d names, want 2 (kept and new, the ones younger than the retention)", n)
	}
	if ok, err := tier.Landed(ctx, "pod", "new"); !ok || err != nil {
		t.Fatalf("the young name after Fold: %v, %v", ok, err)
	}
}
