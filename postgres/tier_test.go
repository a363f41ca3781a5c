package postgres

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/coverage/coveragetest"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestConformance runs the durable tiers' suite: every client has its own
// pool on one fresh schema.
func TestConformance(t *testing.T) {
	durabletest.Run(t, durabletest.Harness{New: func(t *testing.T) func(t *testing.T) durable.Tier {
		schema := freshSchema(t)
		return func(t *testing.T) durable.Tier { return openTier(t, schema) }
	}})
}

func TestPositionsConformance(t *testing.T) {
	coveragetest.RunPositions(t, coveragetest.PositionHarness{Open: func(t *testing.T, sources ...coverage.Source) coverage.PositionStore {
		p, err := OpenPositions(ctx, Options{URL: catalogtest.PostgresURL(), Schema: freshSchema(t)}, sources...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}})
}

// TestPositionsBound: a partition keeps its highest
// MaxPositionsPerPartition positions, whatever the order of the saves.
func TestPositionsBound(t *testing.T) {
	src := coverage.Source{Name: "files", Regime: coverage.Stored}
	p, err := OpenPositions(ctx, Options{URL: catalogtest.PostgresURL(), Schema: freshSchema(t)}, src)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	n := MaxPositionsPerPartition + 40
	for _, b := range rng.Perm(n) {
		if err := p.SavePosition(ctx, coverage.Position{Source: src.Name, Cursor: fmt.Appendf(nil, "c%d", b), Batch: uint64(b)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := p.Positions(ctx, src.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxPositionsPerPartition || got[0].Batch != uint64(n-MaxPositionsPerPartition) || got[len(got)-1].Batch != uint64(n-1) {
		t.Fatalf("kept %d positions from batch %d to %d, want the highest %d up to %d", len(got), got[0].Batch, got[len(got)-1].Batch, MaxPositionsPerPartition, n-1)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Positions(ctx, src.Name, 0); !errors.Is(err, coverage.ErrClosed) {
		t.Fatalf("after close: %v, want ErrClosed", err)
	}
}

// model is what the tier must hold.
type model map[coverage.Destination]*coverage.RangeSet

func (m model) add(ranges []coverage.DestinationRanges) {
	for _, dr := range ranges {
		if m[dr.Destination] == nil {
			m[dr.Destination] = new(coverage.RangeSet)
		}
		for _, r := range dr.Ranges {
			_ = m[dr.Destination].Add(r)
		}
	}
}

func (m model) check(t *testing.T, what string, tier *Tier) {
	t.Helper()
	got, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(got) != len(m) {
		t.Fatalf("%s: %d destinations, want %d", what, len(got), len(m))
	}
	for d, want := range m {
		if g := got[d]; g == nil || !g.Equal(want) {
			t.Fatalf("%s: %s covers %v, want %v", what, d, g, want.String())
		}
	}
}

// TestConcurrentTiersUnion: four Tiers, each with its own pool, append
// checkpoints that each touch several of the same few destinations, in
// random order and overlapping: the result is the exact union, and no
// append fails (rows are locked in one order, so no deadlock surfaces).
func TestConcurrentTiersUnion(t *testing.T) {
	schema := freshSchema(t)
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	dests := []coverage.Destination{{Sink: "raw", Topic: "t"}, {Sink: "raw", Topic: "t", Partition: 1}, {Sink: "lake", Topic: "t"}, {Sink: "lake", Topic: "u"}}
	const writers, per = 4, 40
	plans := make([][]durable.Checkpoint, writers)
	m := model{}
	for w := range writers {
		for i := range per {
			c := durable.Checkpoint{Writer: fmt.Sprintf("pod-%d", w), Name: fmt.Sprintf("ck-%d", i)}
			for _, j := range rng.Perm(len(dests))[:1+rng.IntN(len(dests))] {
				s := uint64(rng.IntN(2000))
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: dests[j], Ranges: []coverage.Range{{Start: s, End: s + 1 + uint64(rng.IntN(30))}}})
			}
			plans[w] = append(plans[w], c)
			m.add(c.Ranges)
		}
	}
	var wg sync.WaitGroup
	tiers := make([]*Tier, writers)
	for w := range writers {
		tier := openTier(t, schema)
		tiers[w] = tier
		wg.Go(func() {
			for _, c := range plans[w] {
				if err := tier.Append(ctx, c); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	m.check(t, "after concurrent appends", openTier(t, schema))
	for w, tier := range tiers {
		if n := tier.Retries(); n != 0 {
			t.Errorf("writer %d ran %d transactions again: rows locked out of order deadlock", w, n)
		}
	}
}

// TestBadInput: hostile names are data, never SQL; what PostgreSQL cannot
// hold or a range past MaxBatchEnd is refused before anything is written.
func TestBadInput(t *testing.T) {
	tier := openTier(t, freshSchema(t))
	m := model{}
	for i, name := range []string{`a'b`, `a"b`, `x'); DROP TABLE coverage; --`, `; SELECT 1`, `\x00`, `$1`, `%s`} {
		c := durable.Checkpoint{Writer: name, Name: name, Ranges: []coverage.DestinationRanges{{
			Destination: coverage.Destination{Sink: name, Topic: name, Partition: int32(i)},
			Ranges:      []coverage.Range{{Start: uint64(i), End: uint64(i) + 1}},
		}}}
		if err := tier.Append(ctx, c); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		m.add(c.Ranges)
		if ok, err := tier.Landed(ctx, name, name); !ok || err != nil {
			t.Fatalf("%q landed: %v, %v", name, ok, err)
		}
		got, err := tier.Coverage(ctx, durable.Filter{Sink: name})
		if err != nil || len(got) != 1 {
			t.Fatalf("%q by sink: %v, %v", name, got, err)
		}
	}
	// The top of the range of batch ids fits, exactly.
	top := []coverage.DestinationRanges{{Destination: coverage.Destination{Sink: "s", Topic: "top"}, Ranges: []coverage.Range{{Start: coverage.MaxBatchEnd - 1, End: coverage.MaxBatchEnd}}}}
	if err := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: "top", Ranges: top}); err != nil {
		t.Fatal(err)
	}
	m.add(top)
	m.check(t, "after hostile names", tier)

	one := func(d coverage.Destination, r coverage.Range) []coverage.DestinationRanges {
		return []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}
	}
	good := coverage.Destination{Sink: "s", Topic: "t"}
	for _, c := range []struct {
		name string
		c    durable.Checkpoint
		want error
	}{
		{"NUL in topic", durable.Checkpoint{Writer: "w", Name: "n", Ranges: one(coverage.Destination{Sink: "s", Topic: "a\x00b"}, coverage.Range{Start: 1, End: 2})}, coverage.ErrInvalidDestination},
		{"NUL in sink", durable.Checkpoint{Writer: "w", Name: "n", Ranges: one(coverage.Destination{Sink: "a\x00b", Topic: "t"}, coverage.Range{Start: 1, End: 2})}, coverage.ErrInvalidDestination},
		{"NUL in name", durable.Checkpoint{Writer: "w", Name: "n\x00", Ranges: one(good, coverage.Range{Start: 1, End: 2})}, durable.ErrInvalidCheckpoint},
		{"NUL in writer", durable.Checkpoint{Writer: "\x00", Name: "n", Ranges: one(good, coverage.Range{Start: 1, End: 2})}, durable.ErrInvalidCheckpoint},
		{"past MaxBatchEnd", durable.Checkpoint{Writer: "w", Name: "n", Ranges: one(good, coverage.Range{Start: 0, End: coverage.MaxBatchEnd + 1})}, coverage.ErrInvalidRange},
		{"past 2^64", durable.Checkpoint{Writer: "w", Name: "n", Ranges: one(good, coverage.Range{Start: 1 << 63, End: 1<<64 - 1})}, coverage.ErrInvalidRange},
	} {
		if err := tier.Append(ctx, c.c); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if got, err := tier.Coverage(ctx, durable.Filter{Topic: "a\x00b"}); err != nil || len(got) != 0 {
		t.Errorf("a filter with a NUL: %v, %v", got, err)
	}
	if ok, err := tier.Landed(ctx, "w", "n\x00"); ok || err != nil {
		t.Errorf("landed with a NUL: %v, %v", ok, err)
	}
	m.check(t, "after bad input", tier)
}

func TestOptions(t *testing.T) {
	url := catalogtest.PostgresURL()
	for _, o := range []Options{
		{},                             // neither URL nor Pool
		{URL: url, Pool: adminPool(t)}, // both
		{URL: url, Schema: `x"; DROP SCHEMA public; --`},
		{URL: url, Schema: "Upper"},
		{URL: url, Schema: "1st"},
		{URL: url, Schema: strings.Repeat("a", 64)},
		{URL: url, MaxAttempts: -1},
		{URL: url, MinBackoff: time.Second, MaxBackoff: time.Millisecond},
		{URL: url, FoldRows: -1},
	} {
		if _, err := Open(ctx, o); err == nil {
			t.Errorf("Open accepted %+v", o)
		}
	}
	var o Options
	o.EnsureDefaults()
	if o.Schema != DefaultSchema || o.MaxAttempts != 10 || o.Logger == nil || o.Now == nil ||
		o.FoldEvery != DefaultFoldEvery || o.FoldRows != DefaultFoldRows || o.NameRetention != DefaultNameRetention {
		t.Fatalf("defaults: %+v", o)
	}
	// The tier's name never carries the password.
	schema := freshSchema(t)
	tier, err := Open(ctx, Options{URL: strings.Replace(url, "postgres@", "postgres:hunter2@", 1), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	if strings.Contains(tier.Name(), "hunter2") || !strings.Contains(tier.Name(), schema) {
		t.Fatalf("name %q", tier.Name())
	}
	// A pool given by the caller is not closed by the tier.
	given, err := Open(ctx, Options{Pool: adminPool(t), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	given.Close()
	if err := adminPool(t).Ping(ctx); err != nil {
		t.Fatalf("the caller's pool after Close: %v", err)
	}
}

// TestSerializationFailuresRetried: with every transaction SERIALIZABLE
// (as a server's default_transaction_isolation may make it) and the server
// aborting every third checkpoint transaction with 40001 (a trigger: plain
// appends insert distinct rows and rarely conflict on their own), Append
// runs them again, and the union is exact.
func TestSerializationFailuresRetried(t *testing.T) {
	schema := freshSchema(t)
	url := catalogtest.PostgresURL()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	url += sep + "options=-c%20default_transaction_isolation%3Dserializable"
	d := coverage.Destination{Sink: "raw", Topic: "t"}
	m := model{}
	var wg sync.WaitGroup
	var tiers []*Tier
	openTier(t, schema) // the tables, for the trigger
	q := pgx.Identifier{schema}.Sanitize()
	exec(t, "CREATE SEQUENCE "+q+".aborts")
	exec(t, `CREATE FUNCTION `+q+`.abort_some() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('`+schema+`.aborts') % 3 = 0 THEN
				RAISE EXCEPTION 'injected serialization failure' USING ERRCODE = '40001';
			END IF;
			RETURN NEW;
		END $$`)
	exec(t, "CREATE TRIGGER abort_some BEFORE INSERT ON "+q+".checkpoints FOR EACH ROW EXECUTE FUNCTION "+q+".abort_some()")
	for w := range 4 {
		tier, err := Open(ctx, Options{URL: url, Schema: schema, MaxAttempts: 200, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tier.Close)
		tiers = append(tiers, tier)
		var plan []durable.Checkpoint
		for i := range 25 {
			r := []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: uint64(i*10 + w), End: uint64(i*10 + w + 1)}}}}
			plan = append(plan, durable.Checkpoint{Writer: fmt.Sprint(w), Name: fmt.Sprint(i), Ranges: r})
			m.add(r)
		}
		wg.Go(func() {
			for _, c := range plan {
				if err := tier.Append(ctx, c); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var retries int64
	for _, tier := range tiers {
		retries += tier.Retries()
	}
	t.Logf("%d transactions run again", retries)
	if retries == 0 {
		t.Error("no serialization failure under SERIALIZABLE: the retry path went untested")
	}
	m.check(t, "after serialization failures", tiers[0])
}
