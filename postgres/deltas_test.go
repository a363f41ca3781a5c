package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
)

// openLayout opens a Tier of layout on schema with its own pool, as
// another process would, closed when the test ends.
func openLayout(t testing.TB, schema string, layout Layout) *Tier {
	t.Helper()
	adminPool(t)
	tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tier.Close)
	return tier
}

// foldingTier folds the deltas after some of its appends, so that the
// conformance suite's writers race folds as well as each other.
type foldingTier struct {
	*Tier
	mu  sync.Mutex
	rng *rand.Rand
}

func (f *foldingTier) Append(ctx context.Context, c durable.Checkpoint) error {
	if err := f.Tier.Append(ctx, c); err != nil {
		return err
	}
	f.mu.Lock()
	fold := f.rng.IntN(3) == 0
	f.mu.Unlock()
	if fold {
		if _, err := f.FoldDeltas(ctx); err != nil {
			return fmt.Errorf("fold: %w", err)
		}
	}
	return nil
}

// TestConformanceDeltas runs the durable tiers' suite on the deltas
// layout, each client its own pool, folding now and then.
func TestConformanceDeltas(t *testing.T) {
	seed := testseed.Seed(t)
	var n atomic.Uint64
	durabletest.Run(t, durabletest.Harness{New: func(t *testing.T) func(t *testing.T) durable.Tier {
		schema := freshSchema(t)
		return func(t *testing.T) durable.Tier {
			return &foldingTier{Tier: openLayout(t, schema, LayoutDeltas), rng: rand.New(rand.NewPCG(seed, n.Add(1)))}
		}
	}})
}

// fleetCheckpoint is a random checkpoint over a few sinks, topics and
// partition groups.
func fleetCheckpoint(rng *rand.Rand, writer, name string) durable.Checkpoint {
	c := durable.Checkpoint{Name: name, Writer: writer}
	for range 1 + rng.IntN(6) {
		d := coverage.Destination{Sink: []string{"raw", "lake", "search"}[rng.IntN(3)],
			Topic: []string{"orders", "users", "clicks"}[rng.IntN(3)], Partition: int32(rng.IntN(3 * object.GroupSize))}
		start := uint64(rng.IntN(5000))
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(rng.IntN(30))}}})
	}
	return c
}

// coverageModel is what the tier must hold: per destination, the union
// of what was appended.
type coverageModel map[coverage.Destination]*coverage.RangeSet

func (m coverageModel) add(c durable.Checkpoint) {
	for _, dr := range c.Ranges {
		if m[dr.Destination] == nil {
			m[dr.Destination] = new(coverage.RangeSet)
		}
		for _, r := range dr.Ranges {
			_ = m[dr.Destination].Add(r)
		}
	}
}

// requireExactly fails unless tier reads exactly m: every destination,
// nothing more, through Coverage, LastWrites and TopicSinks.
func requireExactly(t *testing.T, tier *Tier, m coverageModel, when string) {
	t.Helper()
	got, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if len(got) != len(m) {
		t.Fatalf("%s: %d destinations, want %d", when, len(got), len(m))
	}
	for d, set := range m {
		if got[d] == nil || !got[d].Equal(set) {
			t.Fatalf("%s: %s holds %v, want the union %v", when, d, got[d], set)
		}
	}
	lw, err := tier.LastWrites(ctx, durable.Filter{})
	if err != nil || len(lw) != len(m) {
		t.Fatalf("%s: last writes of %d destinations (%v), want %d", when, len(lw), err, len(m))
	}
	sinks, err := tier.TopicSinks(ctx, nil)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	want := map[string][]string{}
	for d := range m {
		if !slices.Contains(want[d.Topic], d.Sink) {
			want[d.Topic] = append(want[d.Topic], d.Sink)
		}
	}
	for topic := range want {
		slices.Sort(want[topic])
		slices.Sort(sinks[topic])
	}
	if !maps.EqualFunc(sinks, want, slices.Equal) {
		t.Fatalf("%s: topic sinks %v, want %v", when, sinks, want)
	}
	one := coverage.Destination{}
	for d := range m {
		one = d
		break
	}
	part, err := tier.Coverage(ctx, durable.Filter{Topic: one.Topic, Partition: &one.Partition})
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	for d, set := range part {
		if d.Topic != one.Topic || d.Partition != one.Partition || !set.Equal(m[d]) {
			t.Fatalf("%s: partition %s/%d read %s as %v, want %v", when, one.Topic, one.Partition, d, set, m[d])
		}
	}
}

// TestLayoutSwitchKeepsUnion: a deployment writes in the rows layout,
// then its pods move to the deltas layout one by one, writing on, with
// folds of both between; then back. Every Tier, whatever its layout, reads
// exactly the union of every checkpoint, and finds every name landed.
func TestLayoutSwitchKeepsUnion(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	schema := freshSchema(t)
	rows, deltas := openLayout(t, schema, LayoutRows), openLayout(t, schema, LayoutDeltas)
	m := coverageModel{}
	var names []durable.Checkpoint
	write := func(tier *Tier, writer string, n int) {
		for i := range n {
			c := fleetCheckpoint(rng, writer, fmt.Sprintf("%s-%d-%d", writer, len(names), i))
			if err := tier.Append(ctx, c); err != nil {
				t.Fatal(err)
			}
			m.add(c)
			names = append(names, c)
		}
	}
	write(rows, "pod-a", 30)
	write(rows, "pod-b", 30)
	requireExactly(t, deltas, m, "rows only, read by a deltas-layout Tier")
	write(deltas, "pod-a", 30) // pod-a restarted in the deltas layout
	write(rows, "pod-b", 20)   // pod-b not yet
	requireExactly(t, rows, m, "both layouts, read by a rows-layout Tier")
	requireExactly(t, deltas, m, "both layouts, read by a deltas-layout Tier")
	if res, err := deltas.FoldDeltas(ctx); err != nil || res.Deltas != 30 {
		t.Fatalf("fold: %+v, %v; want 30 deltas folded", res, err)
	}
	write(deltas, "pod-b", 30)
	requireExactly(t, rows, m, "after a fold, more deltas")
	if _, err := rows.Fold(ctx, durable.Filter{}); err != nil { // the rows, and the deltas
		t.Fatal(err)
	}
	if n := deltaCount(t, schema); n != 0 {
		t.Fatalf("after Fold of the whole table, %d deltas left", n)
	}
	write(rows, "pod-a", 10) // and back
	for _, tier := range []*Tier{rows, deltas} {
		requireExactly(t, tier, m, "at the end")
		for _, c := range names {
			if ok, err := tier.Landed(ctx, c.Writer, c.Name); !ok || err != nil {
				t.Fatalf("%q of %q: landed %v, %v", c.Name, c.Writer, ok, err)
			}
		}
	}
}

func deltaCount(t *testing.T, schema string) int {
	t.Helper()
	var n int
	if err := adminPool(t).QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".blobs WHERE key LIKE 'deltas/%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRowsAndDeltasWritersAtOnce: writers of both layouts append at once
// while a folder folds the deltas and readers read. Every read holds every
// checkpoint acknowledged before it began and nothing never appended; at
// the end, every Tier reads exactly the union.
func TestRowsAndDeltasWritersAtOnce(t *testing.T) {
	seed := testseed.Seed(t)
	schema := freshSchema(t)
	const writers, per = 4, 30
	all := coverageModel{}
	plans := make([][]durable.Checkpoint, writers)
	rng := rand.New(rand.NewPCG(seed, 2))
	for w := range writers {
		for i := range per {
			c := fleetCheckpoint(rng, fmt.Sprintf("pod-%d", w), fmt.Sprintf("ck-%d", i))
			plans[w] = append(plans[w], c)
			all.add(c)
		}
	}
	var mu sync.Mutex
	acked := coverageModel{}
	stop := make(chan struct{})
	errs := make(chan error, 16)
	var bg sync.WaitGroup
	folder := openLayout(t, schema, LayoutDeltas)
	bg.Add(2)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := folder.FoldDeltas(ctx); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer bg.Done()
		reader := openLayout(t, schema, LayoutRows)
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			before := coverageModel{}
			for d, s := range acked {
				c := s.Clone()
				before[d] = &c
			}
			mu.Unlock()
			got, err := reader.Coverage(ctx, durable.Filter{})
			if err != nil {
				errs <- err
				return
			}
			for d, s := range before {
				if got[d] == nil || !holdsAll(got[d], s) {
					errs <- fmt.Errorf("a read lost acknowledged coverage of %s: %v, want at least %v", d, got[d], s)
					return
				}
			}
			for d, s := range got {
				if all[d] == nil || !holdsAll(all[d], s) {
					errs <- fmt.Errorf("a read leads: %s reads %v, never appended beyond %v", d, s, all[d])
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		layout := LayoutRows
		if w%2 == 1 {
			layout = LayoutDeltas
		}
		tier := openLayout(t, schema, layout)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range plans[w] {
				if err := tier.Append(ctx, c); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				acked.add(c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := folder.FoldDeltas(ctx); err != nil {
		t.Fatal(err)
	}
	requireExactly(t, folder, all, "at the end")
	requireExactly(t, openLayout(t, schema, LayoutRows), all, "at the end, a new rows-layout Tier")
}

// TestDeltasRetryAcrossLayouts: a checkpoint whose first attempt landed in
// the rows layout, retried (MayHaveLanded) by a process now in the deltas
// layout, is found and not written again; the name with another payload is
// ErrNameReused there too.
func TestDeltasRetryAcrossLayouts(t *testing.T) {
	schema := freshSchema(t)
	rows, deltas := openLayout(t, schema, LayoutRows), openLayout(t, schema, LayoutDeltas)
	d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 3}
	c := durable.Checkpoint{Writer: "pod-a", Name: "ck-1", Ranges: oneRange(d, 10, 20)}
	if err := rows.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.MayHaveLanded = true
	if err := deltas.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	if st := deltas.DeltaStats(); st.Writes != 0 || deltaCount(t, schema) != 0 {
		t.Fatalf("a retry of a checkpoint landed as rows wrote a delta: %+v", st)
	}
	other := durable.Checkpoint{Writer: "pod-a", Name: "ck-1", Ranges: oneRange(d, 30, 40), MayHaveLanded: true}
	if err := deltas.Append(ctx, other); !errors.Is(err, durable.ErrNameReused) {
		t.Fatalf("a reused name retried in the deltas layout: %v, want ErrNameReused", err)
	}
	c2 := durable.Checkpoint{Writer: "pod-a", Name: "ck-2", Ranges: oneRange(d, 50, 60)}
	if err := deltas.Append(ctx, c2); err != nil {
		t.Fatal(err)
	}
	c2.MayHaveLanded = true
	if err := deltas.Append(ctx, c2); err != nil || deltaCount(t, schema) != 1 {
		t.Fatalf("a delta appended twice: %v, %d deltas", err, deltaCount(t, schema))
	}
	requireExactly(t, rows, coverageModel{d: rangeSet(t, coverage.Range{Start: 10, End: 20}, coverage.Range{Start: 50, End: 60})}, "after the retries")
}

func rangeSet(t *testing.T, rs ...coverage.Range) *coverage.RangeSet {
	t.Helper()
	s, err := coverage.NewRangeSet(rs...)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestDeltasWithPositions: in the deltas layout a checkpoint's positions
// are saved after its delta landed, never before, and read back as the
// rows layout's are.
func TestDeltasWithPositions(t *testing.T) {
	schema := freshSchema(t)
	src := coverage.Source{Name: "files", Regime: coverage.Stored}
	p, err := OpenPositions(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema, Layout: LayoutDeltas}, src)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tier := openLayout(t, schema, LayoutDeltas)
	if !p.SharesTier(tier) {
		t.Fatal("the positions store does not share its own schema's tier")
	}
	d := coverage.Destination{Sink: "raw", Topic: "files", Partition: 0}
	c := durable.Checkpoint{Writer: "pod-a", Name: "ck-1", Ranges: oneRange(d, 0, 10)}
	ps := []coverage.Position{{Source: "files", Partition: 0, Batch: 9, Cursor: []byte("f9")}, {Source: "unknown", Batch: 1}}
	saved, refused, err := p.AppendWithPositions(ctx, tier, c, ps)
	if err != nil || saved != 1 || len(refused) != 1 {
		t.Fatalf("AppendWithPositions = %d saved, %v refused, %v; want 1 saved, 1 refused", saved, refused, err)
	}
	if deltaCount(t, schema) != 1 || rowCount(t, schema) != 0 {
		t.Fatalf("the checkpoint is not one delta: %d deltas, %d rows", deltaCount(t, schema), rowCount(t, schema))
	}
	got, err := p.Positions(ctx, "files", 0)
	if err != nil || len(got) != 1 || got[0].Batch != 9 {
		t.Fatalf("positions = %v, %v", got, err)
	}
	// A failing checkpoint saves no position.
	bad := durable.Checkpoint{Writer: "pod-a", Name: "ck-1", Ranges: oneRange(d, 50, 60), MayHaveLanded: true}
	if _, _, err := p.AppendWithPositions(ctx, tier, bad, []coverage.Position{{Source: "files", Partition: 0, Batch: 60}}); !errors.Is(err, durable.ErrNameReused) {
		t.Fatalf("a reused name: %v, want ErrNameReused", err)
	}
	if got, _ := p.Positions(ctx, "files", 0); len(got) != 1 {
		t.Fatalf("a checkpoint that failed saved positions: %v", got)
	}
}

// holdsAll reports whether a holds every range of b.
func holdsAll(a, b *coverage.RangeSet) bool {
	for r := range b.All() {
		if !a.ContainsRange(r) {
			return false
		}
	}
	return true
}
