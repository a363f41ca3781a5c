// Package scale builds the scale scenario of the benchmarks and of its
// smaller test: a coverage table of many destinations with many gaps each,
// built by many checkpoints from several writers, then compacted. For tests
// and benchmarks only.
//
// The invariant it serves: the table it builds holds exactly what Covered
// and GapsOf say, so a reader measured on it can be checked, not only timed.
package scale

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
)

// Config shapes a scenario. Sink 0 is raw (coverage.RawSink); it covers
// [0, 10*Gaps) of every partition in Gaps adjacent ranges. Every other sink
// covers the same ranges less their last batch: Gaps holes of one batch.
type Config struct {
	Topics, Partitions, Sinks int
	Gaps                      int // per destination of a sink other than raw
	Checkpoints               int // appends that build the table
	Writers                   int // writer names the appends take in turn
}

// Full is the scenario of make bench: 10,000 destinations, a million ranges
// in 1,000 checkpoints from 4 writers.
var Full = Config{Topics: 100, Partitions: 20, Sinks: 5, Gaps: 100, Checkpoints: 1000, Writers: 4}

// Small is the scenario of make test.
var Small = Config{Topics: 6, Partitions: 4, Sinks: 3, Gaps: 8, Checkpoints: 24, Writers: 3}

// Sink is the name of sink i.
func (c Config) Sink(i int) string {
	if i == 0 {
		return coverage.RawSink
	}
	return fmt.Sprintf("sink-%d", i)
}

// Topic is the name of topic i.
func (c Config) Topic(i int) string { return fmt.Sprintf("topic-%03d", i) }

// Destinations lists every destination, sorted.
func (c Config) Destinations() []coverage.Destination {
	var out []coverage.Destination
	for s := range c.Sinks {
		for t := range c.Topics {
			for p := range c.Partitions {
				out = append(out, coverage.Destination{Sink: c.Sink(s), Topic: c.Topic(t), Partition: int32(p)})
			}
		}
	}
	slices.SortFunc(out, coverage.Destination.Compare)
	return out
}

// Rows is how many rows the checkpoints append.
func (c Config) Rows() int { return c.Sinks * c.Topics * c.Partitions * c.Gaps }

// rangeOf is the i-th range appended for d.
func rangeOf(d coverage.Destination, i int) coverage.Range {
	r := coverage.Range{Start: uint64(i) * 10, End: uint64(i)*10 + 10}
	if d.Sink != coverage.RawSink {
		r.End--
	}
	return r
}

// Covered is d's coverage once the table is built.
func (c Config) Covered(d coverage.Destination) coverage.RangeSet {
	var s coverage.RangeSet
	for i := range c.Gaps {
		_ = s.Add(rangeOf(d, i))
	}
	return s
}

// GapsOf are d's gaps against raw: one batch at the end of each ten; none
// for raw itself.
func (c Config) GapsOf(d coverage.Destination) []coverage.Range {
	if d.Sink == coverage.RawSink {
		return nil
	}
	out := make([]coverage.Range, c.Gaps)
	for i := range out {
		out[i] = coverage.Range{Start: uint64(i)*10 + 9, End: uint64(i)*10 + 10}
	}
	return out
}

// Pods expire snapshots every mirror.DefaultExpireEvery checkpoints,
// keeping the last 20 and those younger than 15 minutes; a build is shorter
// than that, so the age limit is lowered as it would have passed.
var expire = durable.ExpireOptions{OlderThan: time.Millisecond, RetainLast: durable.DefaultRetainLast}

const expireEvery = 20

// Build appends the scenario's rows to tbl in c.Checkpoints appends (round
// by round, each round's ranges of every destination spread over
// consecutive appends, the writers taking turns), expiring snapshots as the
// pods do, then compacts it.
func Build(ctx context.Context, tbl *iceberg.Table, c Config) (compaction.Result, error) {
	dests := c.Destinations()
	per := (c.Rows() + c.Checkpoints - 1) / c.Checkpoints
	var pending []coverage.DestinationRanges
	n := 0
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		slices.SortFunc(pending, func(a, b coverage.DestinationRanges) int { return a.Destination.Compare(b.Destination) })
		writer := fmt.Sprintf("pod-%d", n%max(c.Writers, 1))
		err := tbl.Append(ctx, durable.Checkpoint{Name: fmt.Sprintf("%s/%d", writer, n), Writer: writer, Ranges: pending})
		pending, n = nil, n+1
		if err == nil && n%expireEvery == 0 {
			_, err = tbl.ExpireSnapshots(ctx, expire)
		}
		return err
	}
	for i := range c.Gaps {
		for _, d := range dests {
			pending = append(pending, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{rangeOf(d, i)}})
			if len(pending) == per {
				if err := flush(); err != nil {
					return compaction.Result{}, fmt.Errorf("scale: checkpoint %d: %w", n, err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return compaction.Result{}, fmt.Errorf("scale: checkpoint %d: %w", n, err)
	}
	res, err := compaction.Compact(ctx, tbl, compaction.Options{})
	if err != nil {
		return res, fmt.Errorf("scale: compacting: %w", err)
	}
	return res, nil
}

// Measure runs fn and returns how long it took and the peak of the Go
// heap's live objects while it ran, above what they were when it started
// (sampled every millisecond from runtime/metrics, after a GC).
func Measure(fn func() error) (time.Duration, uint64, error) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	start := time.Now()
	err := fn()
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if v := read(); v > peak.Load() {
		peak.Store(v)
	}
	if p := peak.Load(); p > base {
		return took, p - base, err
	}
	return took, 0, err
}

// RawAppend appends rows to tbl with iceberg-go's own Append and nothing
// else (no verification, no summary, no retry): the baseline a checkpoint
// is measured against. It returns the table after the append.
func RawAppend(ctx context.Context, tbl *table.Table, rows []coverage.DestinationRanges) (*table.Table, error) {
	schema, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	col := func(name string) array.Builder { return bld.Field(schema.FieldIndices(name)[0]) }
	sink, topic := col(iceberg.ColSink).(*array.StringBuilder), col(iceberg.ColTopic).(*array.StringBuilder)
	partition := col(iceberg.ColPartition).(*array.Int32Builder)
	start, end := col(iceberg.ColRangeStart).(*array.Int64Builder), col(iceberg.ColRangeEnd).(*array.Int64Builder)
	writer, checkpoint := col(iceberg.ColWriter).(*array.StringBuilder), col(iceberg.ColCheckpointID).(*array.StringBuilder)
	at, key := col(iceberg.ColRecordedAt).(*array.TimestampBuilder), col(iceberg.ColSinkKey).(*array.StringBuilder)
	now, _ := arrow.TimestampFromTime(time.Now(), arrow.Microsecond)
	for _, dr := range rows {
		k := iceberg.PathKey(dr.Destination.Sink)
		for _, r := range dr.Ranges {
			sink.Append(dr.Destination.Sink)
			topic.Append(dr.Destination.Topic)
			partition.Append(dr.Destination.Partition)
			start.Append(int64(r.Start))
			end.Append(int64(r.End))
			writer.Append("baseline")
			checkpoint.Append("baseline")
			at.Append(now)
			key.Append(k)
		}
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return tbl.Append(ctx, rdr, nil)
}
