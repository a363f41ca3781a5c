package queries

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/recovery"
)

// openObjectStore opens a sink-object store on a fresh directory, stamping
// last writes with now.
func openObjectStore(t testing.TB, now func() time.Time) *object.Tier {
	t.Helper()
	blobs, err := object.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	s, err := object.Open(ctx, object.Options{Blobs: blobs, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// randomHistory appends the same n random checkpoints (overlapping,
// touching and repeated ranges, hostile names, as randomTable writes) to
// every tier, and returns the model of what they cover.
func randomHistory(t testing.TB, r *rand.Rand, n int, tiers ...durable.Tier) model {
	t.Helper()
	m := model{}
	var previous []coverage.DestinationRanges
	for i := range n {
		var rows []coverage.DestinationRanges
		if previous != nil && r.IntN(4) == 0 {
			rows = previous // a second owner checkpointing the same batches
		}
		for range 1 + r.IntN(5) {
			d := coverage.Destination{Sink: sinks[r.IntN(len(sinks))], Topic: topics[r.IntN(len(topics))], Partition: int32(r.IntN(3))}
			dr := coverage.DestinationRanges{Destination: d}
			for range 1 + r.IntN(4) {
				start := r.Uint64N(300)
				dr.Ranges = append(dr.Ranges, coverage.Range{Start: start, End: start + 1 + r.Uint64N(40)})
			}
			rows = append(rows, dr)
		}
		for _, dr := range rows {
			for _, rg := range dr.Ranges {
				m.add(dr.Destination, rg)
			}
		}
		writer := []string{"pod-a", "pod-b"}[r.IntN(2)]
		for _, tier := range tiers {
			if err := tier.Append(ctx, durable.Checkpoint{Name: fmt.Sprintf("%s/%d", writer, i+1), Writer: writer, Ranges: rows}); err != nil {
				t.Fatalf("append to %s: %v", tier.Name(), err)
			}
		}
		previous = rows
	}
	return m
}

// TestTierAgreesWithTable: the same random history appended to the sink
// objects and to the coverage table gives the same coverage, gaps and
// summary (and lag's batch counts) through OpenTier and Open, under random
// filters, and the coverage and gaps are the coverage package's.
func TestTierAgreesWithTable(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	rounds := 8
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		store := openObjectStore(t, nil)
		tbl := tabletest.EmbeddedTable(t)
		m := randomHistory(t, r, 1+r.IntN(12), store, tbl)
		fromTier, err := OpenTier(ctx, store, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fromTable, err := Open(ctx, tbl, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if fromTier.Binding() != FromTier || fromTier.Snapshot() != 0 {
			t.Fatalf("OpenTier: binding %q, snapshot %d", fromTier.Binding(), fromTier.Snapshot())
		}
		for q := range 10 {
			p := Params{}
			if q > 0 {
				p = randomParams(r)
			}
			where := fmt.Sprintf("round %d, params %+v", round, p)
			for _, name := range []string{"coverage", "gaps", "summary", "lag"} {
				a, errA := fromTier.Run(ctx, name, p)
				b, errB := fromTable.Run(ctx, name, p)
				if errors.Is(errA, recovery.ErrNoReference) && errors.Is(errB, recovery.ErrNoReference) {
					continue
				}
				if errA != nil || errB != nil {
					t.Fatalf("%s: %s: tier %v, table %v", where, name, errA, errB)
				}
				if name == "lag" {
					// recorded_at differs: a checkpoint's time per row in the
					// table, a destination's last write in the objects.
					a, b = lagCounts(a), lagCounts(b)
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("%s: %s differs:\ntier  %v\ntable %v", where, name, a.Rows, b.Rows)
				}
				switch name {
				case "coverage":
					if got, want := destinationRows(t, a), m.coverageRows(p); !slices.Equal(got, want) {
						t.Fatalf("%s: coverage: %s", where, rowDiff(got, want))
					}
				case "gaps":
					if got, want := destinationRows(t, a), m.gapRows(p); !slices.Equal(got, want) {
						t.Fatalf("%s: gaps: %s", where, rowDiff(got, want))
					}
				}
			}
		}
		_ = fromTier.Close()
		_ = fromTable.Close()
	}
}

// lagCounts keeps the lag query's sink and batch columns, dropping the
// timestamps.
func lagCounts(res *Result) *Result {
	out := &Result{Columns: res.Columns[:5]}
	for _, row := range res.Rows {
		out.Rows = append(out.Rows, row[:5])
	}
	return out
}

// TestTierLastWrites: writer and recorded_at are each destination's last
// write, so lag reports when each side last grew; a tier without the
// capability gives NULL times, which lag tolerates. The files query finds
// no data files, and a table binding is refused.
func TestTierLastWrites(t *testing.T) {
	clock := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return clock }
	store := openObjectStore(t, now)
	appendTo := func(writer, name string, d coverage.Destination, rs ...coverage.Range) {
		t.Helper()
		err := store.Append(ctx, durable.Checkpoint{Name: name, Writer: writer, Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: rs}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}
	lake := raw.WithSink("lake")
	appendTo("pod-a", "a/1", raw, coverage.Range{Start: 0, End: 100})
	appendTo("pod-a", "a/2", lake, coverage.Range{Start: 0, End: 10}, coverage.Range{Start: 20, End: 30})
	clock = clock.Add(time.Minute)
	appendTo("pod-b", "b/1", raw, coverage.Range{Start: 100, End: 150})

	db, err := OpenTier(ctx, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.RunSQL(ctx, `SELECT sink, range_start, range_end, writer, checkpoint_id, recorded_at FROM coverage ORDER BY sink, range_start`, Params{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	want := [][]any{
		{"lake", int64(0), int64(10), "pod-a", "", t0},
		{"lake", int64(20), int64(30), "pod-a", "", t0},
		{"raw", int64(0), int64(150), "pod-b", "", t0.Add(time.Minute)},
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("coverage rows %v, want %v", res.Rows, want)
	}
	for i, row := range res.Rows {
		at, _ := row[5].(time.Time)
		if !slices.Equal(row[:5], want[i][:5]) || !at.Equal(want[i][5].(time.Time)) {
			t.Fatalf("row %d: %v, want %v", i, row, want[i])
		}
	}
	lag, err := db.Run(ctx, "lag", Params{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lag.Rows) != 1 || lag.Rows[0][3] != int64(120) || !lag.Rows[0][5].(time.Time).Equal(t0) || !lag.Rows[0][6].(time.Time).Equal(t0.Add(time.Minute)) {
		t.Fatalf("lag %v %v", lag.Columns, lag.Rows)
	}
	files, err := db.Run(ctx, "files", Params{})
	if err != nil || len(files.Rows) != 0 {
		t.Fatalf("files over a tier: %v, %v; want no rows", files, err)
	}

	// Without LastWrites: the same ranges, empty writers and NULL times.
	bare, err := OpenTier(ctx, struct{ durable.Tier }{store}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	res, err = bare.RunSQL(ctx, `SELECT count(*), count(recorded_at), max(writer) FROM coverage`, Params{})
	if err != nil || !slices.Equal(res.Rows[0], []any{int64(3), int64(0), ""}) {
		t.Fatalf("bare tier: %v, %v", res, err)
	}
	lag, err = bare.Run(ctx, "lag", Params{})
	if err != nil || len(lag.Rows) != 1 || lag.Rows[0][3] != int64(120) || lag.Rows[0][5] != nil {
		t.Fatalf("lag over a bare tier: %v, %v", lag, err)
	}

	if _, err := db.Run(ctx, "gaps", Params{Reference: "rwa"}); !errors.Is(err, recovery.ErrNoReference) || !strings.Contains(err.Error(), "no rows in "+store.Name()) {
		t.Fatalf("gaps against a misspelt reference: %v", err)
	}
	if _, err := OpenTier(ctx, store, Options{Binding: Scan}); err == nil {
		t.Fatal("OpenTier took a table binding")
	}
	empty, err := OpenTier(ctx, openObjectStore(t, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if res, err := empty.Run(ctx, "gaps", Params{}); err != nil || len(res.Rows) != 0 {
		t.Fatalf("gaps over an empty tier: %v, %v", res, err)
	}
}
