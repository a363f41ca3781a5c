package local

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

// BenchmarkRecordVsPebble records b.N ranges (at most 2,000 with Sync) and,
// in the same run, makes as many raw Pebble Sets with pebble.NoSync (held
// in the process, as Pebble does without a sync: the baseline every mode
// is measured against) of keys and values of the same sizes, and reports
// both rates and their ratio:
//
//	go test ./local -run '^$' -bench RecordVsPebble -benchtime 200000x
//
// random-gaps records single batches at random, never adjacent, so every
// record adds a key; in-order records batch after batch, which merging turns
// into one key. ns/op is the cost of one record. Each runs with the default
// options (records coalesced for up to Options.CommitDelay, each commit
// handed to the operating system), with "immediate" (CommitDelay < 0: a
// Pebble commit, and a write to the WAL file, per record) and with "sync"
// (Options.Sync: an fsync per record).
func BenchmarkRecordVsPebble(b *testing.B) {
	d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}
	for _, mode := range []string{"", "immediate", "sync"} {
		sync := mode == "sync"
		for _, w := range []struct {
			name  string
			batch func(r *rand.Rand, i int) uint64
		}{
			{"random-gaps", func(r *rand.Rand, _ int) uint64 { return 2 * r.Uint64N(1<<40) }},
			{"in-order", func(_ *rand.Rand, i int) uint64 { return uint64(i) }},
		} {
			name := w.name
			if mode != "" {
				name += "/" + mode
			}
			b.Run(name, func(b *testing.B) {
				n := b.N
				if sync {
					n = min(n, 2000) // an fsync per write
				}
				raw, err := pebble.Open(b.TempDir(), quietPebble())
				if err != nil {
					b.Fatal(err)
				}
				defer raw.Close()
				opts := Options{Sync: sync}
				if mode == "immediate" {
					opts.CommitDelay = -1 // a Pebble write per record, as raw
				}
				s := openTemp(b, opts)
				defer s.Close()
				writeOpts := pebble.NoSync // the baseline of every mode

				// Alternate chunks of the two, so that both meet the same
				// background flushes and compactions.
				rawRand, ourRand := rand.New(rand.NewPCG(1, 1)), rand.New(rand.NewPCG(1, 1))
				var key []byte
				var rawTime, ourTime time.Duration
				const chunk = 1000
				for done := 0; done < n; done += chunk {
					end := min(done+chunk, n)
					start := time.Now()
					for i := done; i < end; i++ {
						id := w.batch(rawRand, i)
						key = rangeKey(key[:0], kindCovered, d, id)
						if err := raw.Set(key, encodeUint64(id+1), writeOpts); err != nil {
							b.Fatal(err)
						}
					}
					rawTime += time.Since(start)
					start = time.Now()
					for i := done; i < end; i++ {
						id := w.batch(ourRand, i)
						if err := s.Record(ctx, d, coverage.Range{Start: id, End: id + 1}); err != nil {
							b.Fatal(err)
						}
					}
					ourTime += time.Since(start)
				}
				start := time.Now()
				s.mu.Lock()
				err = s.flushLocked()
				s.mu.Unlock()
				if err != nil {
					b.Fatal(err)
				}
				ourTime += time.Since(start)

				rawRate, ourRate := float64(n)/rawTime.Seconds(), float64(n)/ourTime.Seconds()
				b.ReportMetric(float64(ourTime.Nanoseconds())/float64(n), "ns/op")
				b.ReportMetric(rawRate, "nosync-sets/s")
				b.ReportMetric(ourRate, "records/s")
				b.ReportMetric(ourRate/rawRate, "ratio")
				b.ReportMetric(float64(countKeys(b, s, kindCovered)), "keys")
			})
		}
	}
}

// countKeys counts the store's keys of one kind.
func countKeys(tb testing.TB, s *Store, kind byte) int {
	tb.Helper()
	n := 0
	if err := s.scan([]byte{kind}, []byte{kind + 1}, func(_, _ []byte) error { n++; return nil }); err != nil {
		tb.Fatal(err)
	}
	return n
}
