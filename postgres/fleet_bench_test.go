package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
)

// podDests is how many destinations a pod owns in BenchmarkAppendFold:
// about 200 partitions x 5 sinks.
const podDests = 1000

// fleetSide is one side of BenchmarkAppendFold: a Tier on its own schema
// and its own one-connection pool, so that the table's access statistics
// it reads are its own backend's, flushed on demand.
type fleetSide struct {
	tier      *Tier
	pool      *pgxpool.Pool
	table     string
	wholeFold bool // fold the whole table every DefaultFoldEvery-th append, as Append did before
	took      time.Duration
	appends   int
}

// newFleetSide makes a coverage table of size destinations, one row each,
// podDests of them the pod's (topic "pod"), and a Tier on it.
func newFleetSide(b *testing.B, size int, wholeFold bool) *fleetSide {
	schema := freshSchema(b)
	cfg, err := pgxpool.ParseConfig(catalogtest.PostgresURL())
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	o := Options{Pool: pool, Schema: schema}
	if wholeFold {
		o.FoldEvery = -1
	}
	tier, err := Open(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	s := &fleetSide{tier: tier, pool: pool, table: pgx.Identifier{schema, "coverage"}.Sanitize(), wholeFold: wholeFold}
	for _, q := range []struct {
		sql string
		n   int
	}{
		{"INSERT INTO " + s.table + " SELECT 'lake', 'bg' || (g / 1000), g % 1000, '{[0,5)}', 'seed', now() FROM generate_series(0, $1 - 1) g", size - podDests},
		{"INSERT INTO " + s.table + " SELECT 'lake', 'pod', g, '{[0,5)}', 'seed', now() FROM generate_series(0, $1 - 1) g", podDests},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.n); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+s.table); err != nil {
		b.Fatal(err)
	}
	return s
}

// tableStats are the coverage table's rows read (by sequential and index
// scans) and written (inserted and deleted) so far.
func (s *fleetSide) tableStats(b *testing.B) (read, written int64) {
	// The statistics are flushed when the backend next goes idle: force
	// it, then read them on the same (only) connection.
	if _, err := s.pool.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		b.Fatal(err)
	}
	if err := s.pool.QueryRow(ctx, "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0), n_tup_ins + n_tup_del FROM pg_stat_user_tables WHERE relid = $1::regclass",
		s.table).Scan(&read, &written); err != nil {
		b.Fatal(err)
	}
	return read, written
}

// append appends c, and on the whole-fold side folds the whole table
// after every DefaultFoldEvery-th append, as Append did before it folded
// only what it wrote.
func (s *fleetSide) append(b *testing.B, c durable.Checkpoint) {
	t0 := time.Now()
	if err := s.tier.Append(ctx, c); err != nil {
		b.Fatal(err)
	}
	s.appends++
	if s.wholeFold && s.appends%DefaultFoldEvery == 0 {
		if _, err := s.tier.Fold(ctx, durable.Filter{}); err != nil {
			b.Fatal(err)
		}
	}
	s.took += time.Since(t0)
}

// BenchmarkAppendFold: a pod's checkpoint of its 1,000 destinations (one
// range each) into coverage tables of 10,000 and 500,000 destinations:
// Append as it is, folding every eighth append the destinations it wrote
// (those past Options.FoldRows rows), beside the baseline from the same
// run, Append folding the whole table every eighth append (as it did
// before). Both sides fold the pod's rows alike (nine rows per destination
// into one); what differs is what they read to find them. The two run
// alternately. It reports the mean time of an append, fold included, and
// the table's rows read and written per append (PostgreSQL's access
// statistics), per table size. Appends per size: max(b.N, 16), rounded up
// to a multiple of eight.
func BenchmarkAppendFold(b *testing.B) {
	n := (max(b.N, 16) + DefaultFoldEvery - 1) / DefaultFoldEvery * DefaultFoldEvery
	b.Logf("load before: %s", loadAvg())
	for _, size := range []int{10_000, 500_000} {
		sides := []*fleetSide{newFleetSide(b, size, false), newFleetSide(b, size, true)}
		var read0, written0 [2]int64
		for i, s := range sides {
			read0[i], written0[i] = s.tableStats(b)
		}
		for i := range n {
			c := durable.Checkpoint{Name: fmt.Sprintf("ck-%d", i), Writer: "pod-a", Ranges: make([]coverage.DestinationRanges, 0, podDests)}
			start := uint64(10 + i*10)
			for d := range podDests {
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: coverage.Destination{Sink: "lake", Topic: "pod", Partition: int32(d)},
					Ranges: []coverage.Range{{Start: start, End: start + 5}}})
			}
			for _, s := range sides {
				s.append(b, c)
			}
		}
		var ms, read, written [2]float64
		for i, s := range sides {
			r, w := s.tableStats(b)
			ms[i] = float64(s.took.Microseconds()) / 1000 / float64(n)
			read[i], written[i] = float64(r-read0[i])/float64(n), float64(w-written0[i])/float64(n)
			rows, err := s.tier.Coverage(ctx, durable.Filter{Topic: "pod"})
			if err != nil || len(rows) != podDests {
				b.Fatalf("the pod's coverage: %d destinations, %v", len(rows), err)
			}
		}
		k := fmt.Sprintf("%dk", size/1000)
		b.Logf("%s destinations, %d appends of %d: fold of what was written %.1f ms/append, %.0f rows read, %.0f written; whole-table fold %.1f ms/append, %.0f rows read, %.0f written; ratio %.2f (time), %.1f (rows read)",
			k, n, podDests, ms[0], read[0], written[0], ms[1], read[1], written[1], ms[1]/ms[0], read[1]/read[0])
		b.ReportMetric(ms[0], "ms/append-"+k)
		b.ReportMetric(ms[1], "ms/append-whole-"+k)
		b.ReportMetric(read[0], "rows-read/append-"+k)
		b.ReportMetric(read[1], "rows-read/append-whole-"+k)
		b.ReportMetric(ms[1]/ms[0], "ratio-whole-"+k)
	}
	b.Logf("load after: %s", loadAvg())
}
