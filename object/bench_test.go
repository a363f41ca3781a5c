package object

import (
	"context"
	"fmt"
	"slices"
	"sync"
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
