package object

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// benchCheckpoint is writer w's checkpoint i: ten ranges of one sink's
// three partitions, apart from every other writer's.
func benchCheckpoint(w, i int) durable.Checkpoint {
	c := durable.Checkpoint{Name: fmt.Sprintf("ck-%d", i), Writer: fmt.Sprintf("pod-%d", w)}
	for p := range int32(3) {
		var rs []coverage.Range
		for k := range 10 {
			start := uint64((i*10+k)*100 + w*10)
			rs = append(rs, coverage.Range{Start: start, End: start + 5})
		}
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: p}, Ranges: rs})
	}
	return c
}

// runWriters appends per checkpoints from each of writers Stores at once
// (one sink object for all) and returns checkpoints per second, the p99 of
// one Append, and the preconditions lost.
func runWriters(b *testing.B, open func() *Tier, writers, per int) (float64, time.Duration, int64) {
	stores := make([]*Tier, writers)
	for w := range stores {
		stores[w] = open()
	}
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				t0 := time.Now()
				if err := stores[w].Append(context.Background(), benchCheckpoint(w, i)); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	var lost int64
	for _, s := range stores {
		lost += s.Stats().Preconditions
	}
	return float64(writers*per) / elapsed.Seconds(), all[len(all)*99/100], lost
}

// BenchmarkConcurrentWritersOneObject: 8 writers checkpointing into one
// sink's object at once, beside one writer alone in the same run (the
// baseline), on a local directory. b.N is checkpoints per writer.
func BenchmarkConcurrentWritersOneObject(b *testing.B) {
	per := max(b.N, 20)
	results := map[int][3]float64{}
	for _, writers := range []int{1, 8} {
		dir := b.TempDir()
		open := func() *Tier {
			blobs, err := OpenDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = blobs.Close() })
			s, err := Open(context.Background(), Options{Blobs: blobs})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
		rate, p99, lost := runWriters(b, open, writers, per)
		results[writers] = [3]float64{rate, float64(p99), float64(lost)}
	}
	one, eight := results[1], results[8]
	b.Logf("checkpoints into one sink object on a local directory, %d per writer:", per)
	b.Logf("  1 writer   %8.0f checkpoints/s  p99 %8s", one[0], time.Duration(one[1]).Round(time.Microsecond))
	b.Logf("  8 writers  %8.0f checkpoints/s  p99 %8s  %d preconditions lost and retried  ratio to one writer %.2f",
		eight[0], time.Duration(eight[1]).Round(time.Microsecond), int64(eight[2]), eight[0]/one[0])
	b.ReportMetric(eight[0], "8-writers-ckpt/s")
	b.ReportMetric(one[0], "1-writer-ckpt/s")
}

// byteCountingBlobs counts the bytes written through it.
type byteCountingBlobs struct {
	Blobs
	written atomic.Int64
}

func (c *byteCountingBlobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	c.written.Add(int64(len(data)))
	return c.Blobs.Put(ctx, key, data, ifMatch)
}

// BenchmarkPositionBytesPerCheckpoint saves one checkpoint's positions of
// a source with 100 partitions, each with its full history kept
// (MaxPositionsPerPartition positions), and reports the bytes written: one
// SavePosition per partition, as a checkpoint saved them before (each
// rewriting the source's whole object), as the baseline, and one
// SavePositions (one write of the object) in the same iteration, and the
// ratio:
//
//	go test ./object -run '^$' -bench PositionBytesPerCheckpoint -benchtime 3x
func BenchmarkPositionBytesPerCheckpoint(b *testing.B) {
	const partitions = 100
	dir := b.TempDir()
	dirBlobs, err := OpenDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dirBlobs.Close() })
	blobs := &byteCountingBlobs{Blobs: dirBlobs}
	p, err := OpenPositions(ctx, Options{Blobs: blobs}, stored)
	if err != nil {
		b.Fatal(err)
	}
	cursor := func(part int32, batch uint64) []byte {
		return fmt.Appendf(nil, "s3://landing/orders/part-%03d/2026-01-01/file-%08d.parquet", part, batch)
	}
	checkpoint := func(batch uint64) []coverage.Position {
		ps := make([]coverage.Position, 0, partitions)
		for part := range int32(partitions) {
			ps = append(ps, coverage.Position{Source: stored.Name, Partition: part, Cursor: cursor(part, batch), Batch: batch})
		}
		return ps
	}
	var next uint64
	for range MaxPositionsPerPartition { // the full history
		next++
		for _, err := range p.SavePositions(ctx, checkpoint(next)) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	var before, after int64
	for range b.N {
		next++
		start := blobs.written.Load()
		for _, pos := range checkpoint(next) {
			if err := p.SavePosition(ctx, pos); err != nil {
				b.Fatal(err)
			}
		}
		before += blobs.written.Load() - start
		next++
		start = blobs.written.Load()
		for _, err := range coverage.SavePositions(ctx, p, checkpoint(next)) {
			if err != nil {
				b.Fatal(err)
			}
		}
		after += blobs.written.Load() - start
	}
	n := float64(b.N)
	b.ReportMetric(float64(before)/n, "one-per-partition-B/ckpt")
	b.ReportMetric(float64(after)/n, "batched-B/ckpt")
	b.ReportMetric(float64(before)/float64(after), "ratio")
}
