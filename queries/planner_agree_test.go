package queries

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/recovery"
)

// TestGapsAgreeWithThePlanner: on tables of random checkpoints, under
// random filters, acked extents and named sinks (some with no rows at all,
// the reference among them; for every topic and per topic), DuckDB's gaps are exactly the recovery
// planner's, and the summary counts and adds up the same gaps per sink.
func TestGapsAgreeWithThePlanner(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	rounds := 8
	if testing.Short() {
		rounds = 2
	}
	named := append(slices.Clone(sinks), "ghost", "void")
	for round := range rounds {
		tbl := openTable(t)
		randomTable(t, tbl, r, 1+r.IntN(10))
		db, err := Open(ctx, tbl, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for q := range 10 {
			p := randomParams(r)
			if q%2 == 1 {
				for _, s := range named {
					if r.IntN(3) == 0 {
						p.Sinks = append(p.Sinks, s)
					}
				}
			}
			if q%4 >= 2 {
				p.TopicSinks = randomTopicSinks(r, named)
			}
			if r.IntN(6) == 0 {
				p.Sink = named[r.IntN(len(named))]
			}
			where := fmt.Sprintf("round %d query %d, params %+v", round, q, p)
			planned, perr := recovery.CommittedGaps(ctx, tbl, recovery.GapsFilter{Reference: p.Reference, Sink: p.Sink, Topic: p.Topic, Partition: p.Partition, Extents: p.Extents, Sinks: p.Sinks, TopicSinks: p.TopicSinks})
			res, err := db.Run(ctx, "gaps", p)
			if perr == nil && errors.Is(err, recovery.ErrNoReference) && len(planned) == 0 {
				// The planner reads only the selection and finds a missing
				// reference when the selection has rows (recovery.Plan);
				// the SQL checks the whole table. Both say nothing is to do.
				continue
			}
			if errors.Is(perr, recovery.ErrNoReference) != errors.Is(err, recovery.ErrNoReference) {
				t.Fatalf("%s: planner: %v; DuckDB: %v", where, perr, err)
			}
			if perr != nil {
				if !errors.Is(perr, recovery.ErrNoReference) {
					t.Fatalf("%s: planner: %v", where, perr)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var want []row
			count, missing := map[string]int64{}, map[string]*big.Int{}
			for _, g := range planned {
				want = append(want, row{g.Sink, g.Topic, g.Partition, int64(g.Start), int64(g.End)})
				count[g.Sink]++
				missing[g.Sink] = new(big.Int).Add(bigOf(missing[g.Sink]), new(big.Int).SetUint64(g.End-g.Start))
			}
			if got := destinationRows(t, res); !slices.Equal(got, want) {
				t.Fatalf("%s: gaps query against the planner: %s", where, rowDiff(got, want))
			}
			sum, err := db.Run(ctx, "summary", p)
			if err != nil {
				t.Fatalf("%s: summary: %v", where, err)
			}
			seen := map[string]bool{}
			for _, v := range sum.Rows {
				sink := v[0].(string)
				seen[sink] = true
				if v[3].(int64) != count[sink] || bigOf(v[4]).Cmp(bigOf(missing[sink])) != 0 {
					t.Fatalf("%s: summary row %v; the planner has %d gaps missing %v", where, v, count[sink], missing[sink])
				}
			}
			for sink := range count {
				if !seen[sink] {
					t.Fatalf("%s: summary lists no row for %s, which the planner gives %d gaps", where, sink, count[sink])
				}
			}
		}
		_ = db.Close()
	}
}
