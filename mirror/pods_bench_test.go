package mirror

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/object"
)

// The pace and length of BenchmarkPodsOneTable: every pod checkpoints
// once a second for podRounds rounds.
const (
	podInterval = time.Second
	podRounds   = 10
)

// podCounts are the pod counts of the pods benchmarks: up to 16 by default,
// which keeps up on 2 cores; -pods 1,4,16,64 measures beyond.
var podCounts = flag.String("pods", "1,4,16", "the pod counts of BenchmarkPodsOneTable and BenchmarkPodsOneRESTTable, comma-separated")

// BenchmarkPodsOneTable starts N pods in-process (a Mirror each, over its
// own Pebble store and its own catalog connection, as separate processes
// have) on one coverage table in a SQLite catalog, each recording and
// checkpointing every second for podRounds rounds, and in the same run the
// same N pods on the object tier (one local directory, each pod its own
// handle on it) as the baseline. It reports checkpoints per second in all,
// the mean and maximum checkpoint latency, the table's commit conflicts per
// checkpoint and the ratio of the table's rate to the object tier's. Every
// recorded range must be in the durable tier at the end.
//
//	go test ./mirror -run '^$' -bench PodsOneTable -benchtime 1x [-pods 1,4,16,64]
func BenchmarkPodsOneTable(b *testing.B) {
	benchPods(b, tablePods)
}

// benchPods runs the pods benchmark for each of -pods on the table table
// opens, beside the object tier.
func benchPods(b *testing.B, table func(b *testing.B, n int) tierOpener) {
	var counts []int
	for _, f := range strings.Split(*podCounts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("-pods %q: want pod counts such as 1,4,16", *podCounts)
		}
		counts = append(counts, n)
	}
	for _, n := range counts {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var tbl, obj podsResult
			for range b.N {
				tbl = runPods(b, n, table(b, n))
				obj = runPods(b, n, objectPods(b, n))
			}
			b.ReportMetric(tbl.rate(), "table-ckpt/s")
			b.ReportMetric(tbl.mean().Seconds()*1000, "table-mean-ms")
			b.ReportMetric(tbl.max.Seconds()*1000, "table-max-ms")
			b.ReportMetric(tbl.conflictsPer(), "table-conflicts/ckpt")
			b.ReportMetric(float64(tbl.failed), "table-failed-ckpts")
			b.ReportMetric(obj.rate(), "object-ckpt/s")
			b.ReportMetric(obj.mean().Seconds()*1000, "object-mean-ms")
			b.ReportMetric(obj.max.Seconds()*1000, "object-max-ms")
			b.ReportMetric(float64(obj.failed), "object-failed-ckpts")
			b.ReportMetric(tbl.rate()/obj.rate(), "ratio")
		})
	}
}

type podsResult struct {
	checkpoints int
	failed      int // checkpoints that returned an error
	conflicts   uint64
	calls       int           // Checkpoint calls, failed ones too
	total, max  time.Duration // their latency: sum and maximum
	elapsed     time.Duration
}

func (r podsResult) rate() float64 { return float64(r.checkpoints) / r.elapsed.Seconds() }

// mean is a Checkpoint call's mean latency, over every call: a failed
// one's time is in total too.
func (r podsResult) mean() time.Duration {
	return r.total / time.Duration(max(r.calls, 1))
}
func (r podsResult) conflictsPer() float64 {
	return float64(r.conflicts) / float64(max(r.checkpoints, 1))
}

// tierOpener opens pod i's handle on the shared durable tier.
type tierOpener func(i int) durable.Tier

// tablePods is one coverage table in a fresh SQLite catalog, opened by
// each pod through its own catalog.
func tablePods(b *testing.B, _ int) tierOpener {
	props, err := iceberg.EmbeddedProps(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return func(int) durable.Tier {
		cat, err := iceberg.OpenCatalog(ctx, "", props)
		if err != nil {
			b.Fatal(err)
		}
		tbl, err := iceberg.Open(ctx, cat, iceberg.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return tbl
	}
}

// objectPods is one object-tier directory, opened by each pod on its own.
func objectPods(b *testing.B, _ int) tierOpener {
	dir := filepath.Join(b.TempDir(), "objects")
	return func(int) durable.Tier {
		blobs, err := object.OpenDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = blobs.Close() })
		tier, err := object.Open(ctx, object.Options{Blobs: blobs})
		if err != nil {
			b.Fatal(err)
		}
		return tier
	}
}

// runPods runs n pods for podRounds rounds each: on every tick a pod
// records one range of its own partition and checkpoints. A tick missed
// while a checkpoint runs is dropped, as a pod's next checkpoint then
// carries what accumulated. It checks that every recorded range is in the
// tier afterwards.
func runPods(b *testing.B, n int, open tierOpener) podsResult {
	b.Helper()
	tiers := make([]durable.Tier, n)
	mirrors := make([]*Mirror, n)
	for i := range n {
		tiers[i] = open(i)
		l, err := local.Open(local.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		m, err := New(Options{Local: l, Durable: tiers[i], Writer: fmt.Sprintf("pod-%d", i), Interval: podInterval})
		if err != nil {
			b.Fatal(err)
		}
		mirrors[i] = m
	}
	dest := func(i int) coverage.Destination {
		return coverage.Destination{Sink: "lake", Topic: "orders", Partition: int32(i)}
	}
	var mu sync.Mutex
	var res podsResult
	var lastErr error
	var wg sync.WaitGroup
	errs := make(chan error, n)
	b.ResetTimer()
	start := time.Now()
	for i, m := range mirrors {
		wg.Go(func() {
			tick := time.NewTicker(podInterval)
			defer tick.Stop()
			for round := range podRounds {
				<-tick.C
				r := coverage.Range{Start: uint64(round) * 2, End: uint64(round)*2 + 1} // never adjacent
				if err := m.Record(ctx, dest(i), r); err != nil {
					errs <- err
					return
				}
				began := time.Now()
				sum, err := m.Checkpoint(ctx)
				took := time.Since(began)
				mu.Lock()
				if err != nil {
					// Past what one table takes, a commit can lose every
					// attempt before its deadline: the pod's ranges stay
					// pending for its next checkpoint, as in a real pod.
					res.failed++
					lastErr = err
				}
				res.checkpoints += sum.Checkpoints
				res.calls++
				res.total += took
				res.max = max(res.max, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if res.failed > 0 {
		b.Logf("%d of %d pods' checkpoints on %s failed (the last: %v); each pod checkpoints until its ranges landed", res.failed, n*podRounds, tiers[0].Name(), lastErr)
		drain(b, mirrors)
	}
	for _, t := range tiers {
		if c, ok := t.(durable.ConflictCounter); ok {
			res.conflicts += c.CommitConflicts()
		}
	}
	checkPodsLanded(b, tiers[0], n, dest)
	for _, m := range mirrors {
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return res
}

// drain checkpoints every pod, one at a time so that they do not contend,
// until nothing is pending: what a failed checkpoint left is committed
// before the benchmark checks that it landed.
func drain(b *testing.B, mirrors []*Mirror) {
	b.Helper()
	for i, m := range mirrors {
		var err error
		for range 5 {
			if _, err = m.Checkpoint(ctx); err == nil {
				break
			}
		}
		if err != nil {
			b.Fatalf("pod %d: its ranges did not land in 5 checkpoints alone on the tier: %v", i, err)
		}
	}
}

// checkPodsLanded: every range each pod recorded is in the tier.
func checkPodsLanded(b *testing.B, tier durable.Tier, n int, dest func(int) coverage.Destination) {
	b.Helper()
	got, err := tier.Coverage(context.Background(), durable.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		for round := range podRounds {
			r := coverage.Range{Start: uint64(round) * 2, End: uint64(round)*2 + 1}
			set := got[dest(i)]
			if set == nil || !set.ContainsRange(r) {
				b.Fatalf("pod %d's range %s is not in %s", i, r, tier.Name())
			}
		}
	}
}
