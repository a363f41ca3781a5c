package postgres

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
)

// benchCheckpoint is checkpoint i of dests destinations of topic, one
// range each, every one growing its destination's coverage by a range
// apart from the last (as the object tier's benchmark does).
func benchCheckpoint(topic string, dests, i int) durable.Checkpoint {
	c := durable.Checkpoint{Name: fmt.Sprintf("ck-%s-%d", topic, i), Writer: "pod-a", Ranges: make([]coverage.DestinationRanges, 0, dests)}
	start := uint64(i * 10)
	for d := range dests {
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: coverage.Destination{Sink: "lake", Topic: topic, Partition: int32(d)},
			Ranges: []coverage.Range{{Start: start, End: start + 5}}})
	}
	return c
}

// rawInsertSQL is the baseline: the same rows into a plain table, in one
// multi-row statement.
const rawInsertSQL = `INSERT INTO %s (sink, topic, partition, range_start, range_end)
SELECT * FROM unnest($1::text[], $2::text[], $3::int4[], $4::int8[], $5::int8[])`

// rawInsert inserts c's rows into table in one statement in one
// transaction, the arrays built from c as Append builds its own.
func rawInsert(b *testing.B, table string, c durable.Checkpoint) {
	n := int(c.Rows())
	sinks, topics := make([]string, 0, n), make([]string, 0, n)
	parts, lo, hi := make([]int32, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	for _, dr := range c.Ranges {
		for _, r := range dr.Ranges {
			sinks, topics, parts = append(sinks, dr.Destination.Sink), append(topics, dr.Destination.Topic), append(parts, dr.Destination.Partition)
			lo, hi = append(lo, int64(r.Start)), append(hi, int64(r.End))
		}
	}
	tx, err := adminPool(b).Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tag, err := tx.Exec(ctx, fmt.Sprintf(rawInsertSQL, table), sinks, topics, parts, lo, hi)
	if err != nil || tag.RowsAffected() != int64(n) {
		b.Fatalf("raw insert of %d rows: %v, %s", n, err, tag)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCheckpointVsInsert: a checkpoint of D destinations (one range
// each) by Tier.Append, beside the baseline from the same run: a plain
// multi-row INSERT of the same rows (sink, topic, partition, start, end)
// into a plain table of the same schema, in one transaction. The two are
// run alternately, so load from other jobs falls on both. Runs per D:
// max(b.N, 20), and max(b.N, 5) for D=100,000 (a large transaction).
func BenchmarkCheckpointVsInsert(b *testing.B) {
	schema := freshSchema(b)
	tier := openTier(b, schema)
	raw := pgx.Identifier{schema, "raw_ranges"}.Sanitize()
	exec(b, "CREATE TABLE "+raw+" (sink text NOT NULL, topic text NOT NULL, partition int4 NOT NULL, range_start int8 NOT NULL, range_end int8 NOT NULL)")
	b.Logf("load before: %s", loadAvg())
	for _, dests := range []int{1, 1000, 100000} {
		n := max(b.N, 20)
		if dests >= 100000 {
			n = max(b.N, 5)
		}
		topic := fmt.Sprintf("d%d", dests)
		ckpt, ins := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
		for i := range n {
			c := benchCheckpoint(topic, dests, i)
			t0 := time.Now()
			if err := tier.Append(ctx, c); err != nil {
				b.Fatal(err)
			}
			ckpt = append(ckpt, time.Since(t0))
			t0 = time.Now()
			rawInsert(b, raw, c)
			ins = append(ins, time.Since(t0))
		}
		mc, mi := median(ckpt), median(ins)
		b.Logf("D=%d: checkpoint median %s, INSERT of the same rows median %s, ratio %.2f (target <= 1.5), %d runs each",
			dests, mc.Round(time.Microsecond), mi.Round(time.Microsecond), float64(mc)/float64(mi), n)
		b.ReportMetric(float64(mc)/float64(mi), fmt.Sprintf("ratio-D%d", dests))
	}
	b.Logf("load after: %s", loadAvg())
}

// gapSize spaces the ranges of the many-gaps benchmark: range k is
// [k*gapSize, k*gapSize+5), so a gap of 5 batches follows each.
const gapSize = 10

// gappedCheckpoint is one checkpoint of n disjoint ranges of d.
func gappedCheckpoint(d coverage.Destination, n int) durable.Checkpoint {
	rs := make([]coverage.Range, n)
	for k := range rs {
		rs[k] = coverage.Range{Start: uint64(k * gapSize), End: uint64(k*gapSize + 5)}
	}
	return durable.Checkpoint{Name: "build", Writer: "bench", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: rs}}}
}

// manyGapsRun times, on tier, one destination built with n disjoint
// ranges: the build, then per run an Append of one more range (inside a
// gap, so every run adds one) and a read of the destination's coverage
// with its gaps against [0, n*gapSize), whose count is checked.
func manyGapsRun(b *testing.B, tier durable.Tier, n, runs int) (build time.Duration, up, read []time.Duration) {
	d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 7}
	t0 := time.Now()
	if err := tier.Append(ctx, gappedCheckpoint(d, n)); err != nil {
		b.Fatalf("%s: build %d gaps: %v", tier.Name(), n, err)
	}
	build = time.Since(t0)
	ref, err := coverage.NewRangeSet(coverage.Range{Start: 0, End: uint64(n * gapSize)})
	if err != nil {
		b.Fatal(err)
	}
	part := d.Partition
	for i := range runs {
		k := uint64((i + 1) * n / (runs + 1)) // spread through the set
		c := durable.Checkpoint{Name: fmt.Sprintf("one-%d", i), Writer: "bench", Ranges: []coverage.DestinationRanges{{Destination: d,
			Ranges: []coverage.Range{{Start: k*gapSize + 6, End: k*gapSize + 8}}}}}
		t0 := time.Now()
		if err := tier.Append(ctx, c); err != nil {
			b.Fatalf("%s: append one range: %v", tier.Name(), err)
		}
		up = append(up, time.Since(t0))
		t0 = time.Now()
		cov, err := tier.Coverage(ctx, durable.Filter{Sink: d.Sink, Topic: d.Topic, Partition: &part})
		if err != nil {
			b.Fatalf("%s: coverage: %v", tier.Name(), err)
		}
		gaps := coverage.Gaps(&ref, cov[d])
		read = append(read, time.Since(t0))
		// n gaps after the ranges, each of i+1 split in two by a range.
		if len(cov) != 1 || gaps.Len() != n+i+1 {
			b.Fatalf("%s: %d destinations, %d gaps, want 1 and %d", tier.Name(), len(cov), gaps.Len(), n+i+1)
		}
	}
	return build, up, read
}

// BenchmarkMillionGaps: one destination of 1,000,000 disjoint ranges,
// then the append of one more range and the read of its coverage and
// gaps, on these tables beside the Iceberg coverage table in the embedded
// catalog (SQLite, a local warehouse), in the same run. Runs per tier:
// max(b.N, 5).
func BenchmarkMillionGaps(b *testing.B) {
	const n = 1_000_000
	runs := max(b.N, 5)
	b.Logf("load before: %s", loadAvg())
	pg := openTier(b, freshSchema(b))
	pgBuild, pgUp, pgRead := manyGapsRun(b, pg, n, runs)

	props, err := iceberg.EmbeddedProps(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		b.Fatal(err)
	}
	ice, err := iceberg.Open(ctx, cat, iceberg.Options{})
	if err != nil {
		b.Fatal(err)
	}
	iceBuild, iceUp, iceRead := manyGapsRun(b, ice, n, runs)

	b.Logf("%d gaps in one destination, built by one Append: PostgreSQL %s, Iceberg %s; %d runs each:", n, pgBuild.Round(time.Millisecond), iceBuild.Round(time.Millisecond), runs)
	for _, f := range []struct {
		what     string
		pg, base []time.Duration
	}{{"append of one range", pgUp, iceUp}, {"coverage read and gaps", pgRead, iceRead}} {
		mp, mi := median(f.pg), median(f.base)
		b.Logf("  %s: PostgreSQL median %s, Iceberg median %s, ratio %.2f", f.what, mp.Round(time.Microsecond), mi.Round(time.Microsecond), float64(mp)/float64(mi))
		b.ReportMetric(float64(mp)/float64(mi), "ratio-"+strings.Fields(f.what)[0])
	}
	b.Logf("load after: %s", loadAvg())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// loadAvg is the load average (1, 5, 15 minutes), for the figures'
// context: other jobs share the machine.
func loadAvg() string {
	out, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.Join(strings.Fields(string(out))[:3], " ")
}
