package postgres

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
)

// TestBlobsBatchAgreesWithTheModel: random GetMany, PutMany and DeleteMany
// of a few keys against a model of what the one-key calls promise: a
// creation lands only on a missing key, a replacement only at the key's
// current version (never at a version it had before, nor at one the
// table never gave), each put on its own, and reads return exactly what
// landed.
func TestBlobsBatchAgreesWithTheModel(t *testing.T) {
	seed := testseed.Seed(t)
	b := openTier(t, freshSchema(t)).Blobs()
	rng := rand.New(rand.NewPCG(seed, 0))
	keys := []string{"a", "b", "c/1", "c/2", "λ", "100%_"}
	type row struct {
		data    string
		version string
	}
	model := map[string]row{}
	var old []string // versions keys had before
	for step := range 300 {
		switch rng.IntN(3) {
		case 0:
			var puts []object.PutRequest
			for _, i := range rng.Perm(len(keys))[:1+rng.IntN(len(keys))] {
				p := object.PutRequest{Key: keys[i], Data: fmt.Appendf(nil, "%d/%d", step, i)}
				switch r, ok := model[keys[i]]; rng.IntN(5) {
				case 0: // create
				case 1:
					if len(old) > 0 {
						p.IfMatch = old[rng.IntN(len(old))]
					}
				case 2:
					p.IfMatch = "not-a-version"
				default:
					if ok {
						p.IfMatch = r.version
					}
				}
				puts = append(puts, p)
			}
			got, err := b.PutMany(ctx, puts)
			if err != nil || len(got) != len(puts) {
				t.Fatalf("seed %d step %d: PutMany = %v, %v", seed, step, got, err)
			}
			for i, p := range puts {
				r, ok := model[p.Key]
				lands := (p.IfMatch == "" && !ok) || (ok && p.IfMatch == r.version)
				if lands != (got[i] != "") {
					t.Fatalf("seed %d step %d: put of %q if %q (held: %v at %q) landed %v, want %v", seed, step, p.Key, p.IfMatch, ok, r.version, got[i] != "", lands)
				}
				if lands {
					if ok {
						old = append(old, r.version)
					}
					model[p.Key] = row{string(p.Data), got[i]}
				}
			}
		case 1:
			del := keys[rng.IntN(len(keys))]
			if err := b.DeleteMany(ctx, []string{del, "never-there"}); err != nil {
				t.Fatal(err)
			}
			if r, ok := model[del]; ok {
				old = append(old, r.version)
			}
			delete(model, del)
		}
		got, err := b.GetMany(ctx, append(keys, "never-there", "bad\x00key"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(model) {
			t.Fatalf("seed %d step %d: GetMany returned %d keys, want %d", seed, step, len(got), len(model))
		}
		for k, r := range model {
			if o := got[k]; string(o.Data) != r.data || o.Version != r.version {
				t.Fatalf("seed %d step %d: %q = %q at %q, want %q at %q", seed, step, k, o.Data, o.Version, r.data, r.version)
			}
			if data, v, err := b.Get(ctx, k); err != nil || string(data) != r.data || v != r.version {
				t.Fatalf("seed %d step %d: Get of %q = %q at %q, %v; GetMany agreed with the model", seed, step, k, data, v, err)
			}
		}
	}
	if _, err := b.PutMany(ctx, []object.PutRequest{{Key: "dup"}, {Key: "dup"}}); err == nil {
		t.Fatal("PutMany of one key twice: no error")
	}
	if got, err := b.GetMany(ctx, []string{"dup"}); err != nil || len(got) != 0 {
		t.Fatalf("PutMany of one key twice wrote %v, %v", got, err)
	}
}

// TestBlobsPutManyOneWinner: writers put the same keys at once, each at the
// version it read: of each key exactly one put lands, and the key holds
// its bytes.
func TestBlobsPutManyOneWinner(t *testing.T) {
	schema := freshSchema(t)
	base := openTier(t, schema).Blobs()
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	var puts []object.PutRequest
	for _, k := range keys {
		puts = append(puts, object.PutRequest{Key: k, Data: []byte("v0")})
	}
	first, err := base.PutMany(ctx, puts)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		const writers = 4
		results := make([][]string, writers)
		var wg sync.WaitGroup
		for w := range writers {
			b := openTier(t, schema).Blobs()
			wg.Go(func() {
				ps := make([]object.PutRequest, len(keys))
				for i, k := range keys {
					ps[i] = object.PutRequest{Key: k, Data: fmt.Appendf(nil, "%d/%d", round, w), IfMatch: first[i]}
				}
				got, err := b.PutMany(ctx, ps)
				if err != nil {
					t.Error(err)
				}
				results[w] = got
			})
		}
		wg.Wait()
		now, err := base.GetMany(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			winners := 0
			for w := range writers {
				if v := results[w][i]; v != "" {
					winners++
					if want := fmt.Sprintf("%d/%d", round, w); string(now[k].Data) != want || now[k].Version != v {
						t.Fatalf("round %d: %q holds %q at %q; its winner wrote %q at %q", round, k, now[k].Data, now[k].Version, want, v)
					}
				}
			}
			if winners != 1 {
				t.Fatalf("round %d: %d puts of %q at one version landed, want 1", round, winners, k)
			}
			first[i] = now[k].Version
		}
	}
}

// spreadCheckpoint is a checkpoint of writer over many partition groups,
// topics and sinks.
func spreadCheckpoint(rng *rand.Rand, writer, name string) durable.Checkpoint {
	c := durable.Checkpoint{Writer: writer, Name: name}
	for range 1 + rng.IntN(8) {
		d := coverage.Destination{Sink: []string{"raw", "lake"}[rng.IntN(2)], Topic: []string{"orders", "clicks", "users"}[rng.IntN(3)],
			Partition: int32(rng.IntN(20 * object.GroupSize))}
		s := uint64(rng.IntN(5000))
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: s, End: s + 1 + uint64(rng.IntN(30))}}})
	}
	return c
}

// TestFoldDeltasInFewStatements: a fold of many deltas into many bases
// reads, writes and deletes them a batch of keys per statement, and the
// coverage is exactly the union before and after, no delta left.
func TestFoldDeltasInFewStatements(t *testing.T) {
	seed := testseed.Seed(t)
	schema := freshSchema(t)
	writer, folder := openDeltasTier(t, schema, 0), openDeltasTier(t, schema, 0)
	rng := rand.New(rand.NewPCG(seed, 0))
	all := model{}
	const n = 400
	for i := range n {
		c := spreadCheckpoint(rng, fmt.Sprintf("pod-%d", i%13), fmt.Sprintf("ck-%d", i))
		if err := writer.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
		all.add(c.Ranges)
	}
	all.check(t, "before the fold", folder)
	before := folder.Blobs().Stats()
	res, err := folder.FoldDeltas(ctx)
	if err != nil || res.Deltas != n || res.Left != 0 {
		t.Fatalf("seed %d: fold = %+v, %v; want %d deltas folded", seed, res, err, n)
	}
	after := folder.Blobs().Stats()
	statements := (after.Gets - before.Gets) + (after.Puts - before.Puts) + (after.Deletes - before.Deletes)
	// n deltas and res.Bases bases (up to 60): a statement per 128 keys
	// read, written or deleted, and the fold log.
	if limit := int64(2*n/128 + 8); statements > limit {
		t.Fatalf("seed %d: the fold of %d deltas into %d bases took %d statements, want at most %d", seed, n, res.Bases, statements, limit)
	}
	all.check(t, "after the fold", folder)
	if keys, err := folder.Blobs().List(ctx, "deltas/"); err != nil || len(keys) != 0 {
		t.Fatalf("seed %d: %d deltas left after the fold (%v)", seed, len(keys), err)
	}
}

// TestFoldDeltasBaseWriteFails: while the server refuses every write of
// one topic's bases (a trigger raising an error), a fold leaves every
// delta whose bases did not land, and loses nothing: the coverage read is
// the union of every checkpoint, appended before and during the failing
// folds. Once the writes go through, the next fold folds them all.
func TestFoldDeltasBaseWriteFails(t *testing.T) {
	seed := testseed.Seed(t)
	schema := freshSchema(t)
	writer, folder := openDeltasTier(t, schema, 0), openDeltasTier(t, schema, 2)
	table := pgx.Identifier{schema, "blobs"}.Sanitize()
	fn := pgx.Identifier{schema, "refuse_clicks"}.Sanitize()
	exec(t, "CREATE FUNCTION "+fn+"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$")
	all := model{}
	// The keys of "clicks"'s bases begin as the base of a checkpoint of it
	// alone, folded before the trigger, begins.
	probe := durable.Checkpoint{Writer: "probe", Name: "probe", Ranges: []coverage.DestinationRanges{
		{Destination: coverage.Destination{Sink: "raw", Topic: "clicks"}, Ranges: []coverage.Range{{Start: 1, End: 2}}}}}
	if err := writer.Append(ctx, probe); err != nil {
		t.Fatal(err)
	}
	all.add(probe.Ranges)
	if _, err := folder.FoldDeltas(ctx); err != nil {
		t.Fatal(err)
	}
	bases, err := folder.Blobs().List(ctx, "bases/")
	if err != nil || len(bases) != 1 {
		t.Fatalf("the probe's bases: %v, %v", bases, err)
	}
	prefix := bases[0][:strings.LastIndexByte(bases[0], '/')+1]
	exec(t, "CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON "+table+" FOR EACH ROW WHEN (starts_with(NEW.key, '"+prefix+"')) EXECUTE FUNCTION "+fn+"()")
	rng := rand.New(rand.NewPCG(seed, 0))
	appendSome := func(from, to int) {
		for i := from; i < to; i++ {
			c := spreadCheckpoint(rng, fmt.Sprintf("pod-%d", i%5), fmt.Sprintf("ck-%d", i))
			if err := writer.Append(ctx, c); err != nil {
				t.Fatal(err)
			}
			all.add(c.Ranges)
		}
	}
	appendSome(0, 60)
	var wg sync.WaitGroup
	wg.Go(func() { appendSome(60, 120) }) // appends land while folds fail
	for range 3 {
		res, err := folder.FoldDeltas(ctx)
		if err != nil {
			t.Fatalf("seed %d: a fold whose base writes fail: %v (it must leave the deltas, not fail)", seed, err)
		}
		if res.Left == 0 {
			t.Fatalf("seed %d: a fold left no delta while every write of a base of \"clicks\" failed: %+v", seed, res)
		}
	}
	wg.Wait()
	all.check(t, "after folds whose base writes failed", folder)
	exec(t, "DROP TRIGGER refuse ON "+table)
	res, err := folder.FoldDeltas(ctx)
	if err != nil || res.Left != 0 {
		t.Fatalf("seed %d: the fold once writes go through: %+v, %v", seed, res, err)
	}
	all.check(t, "after the last fold", folder)
	if keys, err := folder.Blobs().List(ctx, "deltas/"); err != nil || len(keys) != 0 {
		t.Fatalf("seed %d: %d deltas left after the last fold (%v)", seed, len(keys), err)
	}
}

// openDeltasTier opens a Tier of the deltas layout on schema, with its own
// pool; maxAttempts bounds a base's writes (zero: the default).
func openDeltasTier(t *testing.T, schema string, maxAttempts int) *Tier {
	t.Helper()
	adminPool(t)
	tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema, Layout: LayoutDeltas, MaxAttempts: maxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tier.Close)
	return tier
}
