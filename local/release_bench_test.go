package local

import (
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// BenchmarkCheckpointAfterRelease measures what releasing saves a pod that
// owns 200 partitions (3 sinks each) and owned 2,000 more before
// rebalances moved them: in the same run, one store keeps the 2,000 (as
// before Release existed) and one released them, and each op records a
// batch into an owned partition and runs a checkpoint (begin and commit)
// and Diagnostics on both. It reports each store's figures, their ratios,
// and how long the release of the 2,000 partitions (6,000 destinations)
// took:
//
//	go test ./local -run '^$' -bench CheckpointAfterRelease -benchtime 200x
func BenchmarkCheckpointAfterRelease(b *testing.B) {
	const owned, stale = 200, 2000
	sinks := []string{"raw", "lake", "search"}
	fill := func(s *Store) {
		for p := range int32(owned + stale) {
			for _, sink := range sinks {
				record(b, s, coverage.Destination{Sink: sink, Topic: "orders", Partition: p}, 0, 100)
			}
		}
		checkpointAll(b, s)
	}
	kept, released := openTemp(b, Options{}), openTemp(b, Options{})
	defer kept.Close()
	defer released.Close()
	fill(kept)
	fill(released)
	var parts []coverage.TopicPartition
	for p := range int32(stale) {
		parts = append(parts, coverage.TopicPartition{Topic: "orders", Partition: owned + p})
	}
	start := time.Now()
	res, err := released.Release(ctx, parts)
	releaseTime := time.Since(start)
	if err != nil || len(res.Released) != stale*len(sinks) {
		b.Fatalf("release: %d released, %v", len(res.Released), err)
	}

	var ckpt, diag [2]time.Duration
	b.ResetTimer()
	for i := range b.N {
		d := coverage.Destination{Sink: sinks[i%len(sinks)], Topic: "orders", Partition: int32(i % owned)}
		for k := range 2 {
			j := (i + k) % 2 // alternate which goes first
			s := []*Store{kept, released}[j]
			record(b, s, d, uint64(100+i), uint64(101+i))
			t0 := time.Now()
			checkpointAll(b, s)
			t1 := time.Now()
			if _, err := s.Diagnostics(ctx); err != nil {
				b.Fatal(err)
			}
			ckpt[j] += t1.Sub(t0)
			diag[j] += time.Since(t1)
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(ckpt[0]), "kept-checkpoint-µs")
	b.ReportMetric(per(ckpt[1]), "released-checkpoint-µs")
	b.ReportMetric(float64(ckpt[0])/float64(ckpt[1]), "checkpoint-ratio")
	b.ReportMetric(per(diag[0]), "kept-diagnostics-µs")
	b.ReportMetric(per(diag[1]), "released-diagnostics-µs")
	b.ReportMetric(float64(diag[0])/float64(diag[1]), "diagnostics-ratio")
	b.ReportMetric(float64(releaseTime.Microseconds())/1000, "release-ms")
	if n := len(destinations(b, released)); n != owned*len(sinks) {
		b.Fatalf("%d destinations after the release, want %d", n, owned*len(sinks))
	}
}
