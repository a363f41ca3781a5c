package coverage

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// BenchmarkAddVsRoaring adds 1,000,000 batch ids one at a time to a RangeSet
// and, in the same iteration, to a roaring64 bitmap (what a user might pick
// instead), and reports both rates, their ratio and the bytes each spends
// per covered range. Random order is the set's worst case: it holds up to
// 250,000 ranges at once (4 MB, mostly out of cache, where the bitmap holds
// 128 KB), and each addition searches a chunk and shifts half of it:
//
//	go test ./coverage -run '^$' -bench AddVsRoaring
func BenchmarkAddVsRoaring(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	inOrder := make([]uint64, n)
	for i := range inOrder {
		inOrder[i] = uint64(i)
	}
	random := make([]uint64, n)
	for i, p := range rng.Perm(n) {
		random[i] = uint64(p)
	}
	var missing []uint64
	for _, id := range inOrder {
		if rng.IntN(100) != 0 {
			missing = append(missing, id)
		}
	}
	for _, w := range []struct {
		name string
		ids  []uint64
	}{{"in-order", inOrder}, {"random-order", random}, {"1pct-missing", missing}} {
		b.Run(w.name, func(b *testing.B) {
			var setTime, roaringTime time.Duration
			var setBytes, roaringBytes uint64
			var ranges int
			for range b.N {
				start := time.Now()
				var s RangeSet
				for _, id := range w.ids {
					_ = s.Add(Range{Start: id, End: id + 1})
				}
				setTime += time.Since(start)

				start = time.Now()
				rb := roaring64.New()
				for _, id := range w.ids {
					rb.Add(id)
				}
				roaringTime += time.Since(start)

				ranges = s.Len()
				setBytes = liveBytes(func() any {
					var c RangeSet
					for r := range s.All() {
						_ = c.Add(r)
					}
					return &c
				})
				roaringBytes = rb.GetSizeInBytes()
				runtime.KeepAlive(&s) // freeing it inside liveBytes would skew the count
			}
			adds := float64(len(w.ids) * b.N)
			setRate, roaringRate := adds/setTime.Seconds(), adds/roaringTime.Seconds()
			b.ReportMetric(setRate, "rangeset-adds/s")
			b.ReportMetric(roaringRate, "roaring-adds/s")
			b.ReportMetric(setRate/roaringRate, "speed-ratio")
			b.ReportMetric(float64(ranges), "ranges")
			b.ReportMetric(float64(setBytes)/float64(ranges), "rangeset-B/range")
			b.ReportMetric(float64(roaringBytes)/float64(ranges), "roaring-B/range")
		})
	}
}

// liveBytes returns the heap that build's result keeps alive.
func liveBytes(build func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}
